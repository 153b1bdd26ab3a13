"""A submission's code as highlighted HTML (Pygments, which escapes it), with a
size cap on both.

Highlighting multiplies the bytes: 64 KiB of code (the submission limit) can
make 1.6 MB of HTML. So:

- the preview an instructor's page of submissions shows is the head of the code
  only (PREVIEW_LINES lines, at most PREVIEW_HTML_BYTES of HTML), made once when
  the submission is stored and kept with how much of the code it covers
  (`shown_chars`), the page saying how many lines follow;
- a submission's own page highlights at most HIGHLIGHT_CHARS of the code and
  shows the rest plain (escaped), marked, so that all of it stays readable.

Submissions stored before this existed are previewed when first shown, and kept."""

from __future__ import annotations

import logging

from markupsafe import Markup, escape

from webapp import content

log = logging.getLogger("amp_dojo.code_views")
PREVIEW_LINES = 40
PREVIEW_CHARS = 6000
PREVIEW_HTML_BYTES = 32768
HIGHLIGHT_CHARS = 16384


def _head(code: str, chars: int, lines: int) -> str:
    """The first `lines` lines, at most `chars` characters, cut at a line's end where there is one."""
    head = "".join(code.splitlines(keepends=True)[:lines])[:chars]
    if len(head) < len(code) and "\n" in head:
        head = head[: head.rindex("\n") + 1]
    return head


def preview(code: str) -> tuple[str, int]:
    """(highlighted HTML of the code's head, characters of the code it covers), the HTML within
    PREVIEW_HTML_BYTES: code that highlights into many tokens gets a shorter head."""
    chars, lines = PREVIEW_CHARS, PREVIEW_LINES
    while True:
        head = _head(code, chars, lines)
        html = str(content.highlight_code(head))
        if len(html) <= PREVIEW_HTML_BYTES or chars <= 64:
            return html, len(head)
        chars, lines = max(64, len(head) // 2), max(1, lines // 2)


def remember(db, submission_id: str, code: str) -> None:
    """After the submission is stored: a failure here costs a later view some time, never the submission."""
    try:
        html, shown = preview(code)
        db.execute(
            "INSERT INTO code_views (submission_id, html, shown_chars) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (submission_id, html, shown),
        )
    except Exception:
        log.exception("could not keep the highlighted code of %s", submission_id)


def more_lines(code: str, shown_chars: int) -> int:
    """Lines of the code after its preview."""
    return len(code[shown_chars:].splitlines())


def of_submissions(db, rows: list) -> dict[str, tuple[str, int]]:
    """submission id -> (preview HTML, lines not in it) for these rows (each with id and code)."""
    if not rows:
        return {}
    marks = ",".join("?" * len(rows))
    kept = {
        r["submission_id"]: (r["html"], r["shown_chars"])
        for r in db.execute(
            f"SELECT submission_id, html, shown_chars FROM code_views WHERE submission_id IN ({marks})",
            tuple(r["id"] for r in rows),
        )
    }
    views = {}
    for row in rows:
        if row["id"] not in kept:
            remember(db, row["id"], row["code"])
            kept[row["id"]] = preview(row["code"])
        html, shown = kept[row["id"]]
        views[row["id"]] = (html, more_lines(row["code"], shown))
    return views


def full(code: str, note: str) -> Markup:
    """The whole code for its own page: highlighted up to HIGHLIGHT_CHARS, then plain, after `note` (the
    page's words for "not highlighted from here on", with {n} the lines left)."""
    head = _head(code, HIGHLIGHT_CHARS, len(code))
    html = content.highlight_code(head)
    rest = code[len(head) :]
    if not rest:
        return html
    marker = escape(note.format(n=len(rest.splitlines())))
    return html + Markup(
        '<p class="muted code-truncated" data-testid="code-truncated">{}</p><pre class="code-plain">{}</pre>'
    ).format(marker, rest)

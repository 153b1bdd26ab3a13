"""A grading as HTML for a notebook: each check with its badge and measured
values, each mistake at its line of the cell with that line and the fix, the
loss chart, and what the code printed. Everything the learner's code or
source can influence (output, exception text, source lines, names in
messages) is escaped; the only markup is ours. Styles are inline and use the
notebook's own text colour, so the block reads on light and dark themes."""

from __future__ import annotations

import re
from html import escape

from amp_dojo.chart import loss_svg
from grader.results import ERROR, FAIL, NOT_APPLICABLE, PASS, GradingResult
from grader.wording.phrases import (
    check_name,
    error_heading,
    error_in_words,
    localized,
    measured_in_words,
    phrase,
    summary_in_words,
    verdict,
)
from grader.wording.report import printable

BADGE = {PASS: "#1a7f37", FAIL: "#cf222e", ERROR: "#cf222e", NOT_APPLICABLE: "#6e7781"}
CODE = (
    "background:rgba(127,127,127,.12);padding:2px 6px;margin:2px 0;white-space:pre;overflow-x:auto;"
    "font-family:monospace"
)
MAX_OUTPUT_CHARS = 20_000
# The cell's first line is `%%grade LESSON`: the code the grader saw starts on the cell's second line.
CELL_OFFSET = 1


def _e(text) -> str:
    return escape(str(text), quote=True)


def _prose(text) -> str:
    """A message or fix: escaped, then its `code spans` set as code (escaped text holds no markup to break)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _badge(status: str, lang: str) -> str:
    return (
        f'<span data-status="{_e(status)}" style="display:inline-block;min-width:4.5em;text-align:center;'
        f"font-weight:bold;color:#fff;background:{BADGE.get(status, '#6e7781')};border-radius:3px;"
        f'padding:0 6px">{_e(verdict(status, lang))}</span>'
    )


def _cell_line(line: int | None, lang: str) -> str:
    return f"<strong>{_e(phrase('notebook.cell_line', lang, n=line + CELL_OFFSET))}</strong>: " if line else ""


def _code(lines: list[str], line: int | None, given: str | None = None, column: int | None = None) -> str:
    """The line of the cell, whole; with `column` (a syntax error's), a caret under where Python stopped."""
    code = given if given is not None else (lines[line - 1] if line and 0 < line <= len(lines) else None)
    if code is None:
        return ""
    number = f"{line + CELL_OFFSET:>4} | " if line else ""
    caret = ""
    if column:
        pad = " " * len(number) + "".join("\t" if ch == "\t" else " " for ch in code[: column - 1])
        caret = f'\n{pad}<span class="caret" style="color:#cf222e;font-weight:bold">^</span>'
    return f'<div style="{CODE}"><span style="opacity:.6">{number}</span>{_e(code.rstrip())}{caret}</div>'


def _finding(f: dict, check_message: str, lines: list[str], lang: str) -> str:
    info = f.get("severity") == "info"
    tag = phrase("report.note" if info else "report.mistake", lang)
    text = "" if f["message"] == check_message else ": " + _prose(f["message"])
    return (
        f'<div class="finding" data-finding="{_e(f["id"])}" style="margin:4px 0">{_cell_line(f.get("line"), lang)}'
        f'<span style="color:{"#0969da" if info else "#cf222e"}">{_e(tag)}</span> <code>{_e(f["id"])}</code>{text}'
        f'{_code(lines, f.get("line"))}<div><span style="color:#1a7f37;font-weight:bold">'
        f"{_e(phrase('report.fix', lang))}</span> {_prose(f['fix'])}</div></div>"
    )


def _error(doc: dict, lines: list[str], lang: str) -> str:
    err = doc.get("error")
    if not err:
        return ""
    return (
        f'<tr class="error"><td style="vertical-align:top;text-align:left;padding:2px 0">{_badge(ERROR, lang)}</td>'
        f'<td colspan="2" style="text-align:left;padding:2px 8px">'
        f"<strong>{_e(error_heading(err['kind'], lang))}</strong><div>{_cell_line(err.get('line'), lang)}"
        f"{_prose(error_in_words(err, lang))}</div>{_code(lines, err.get('line'), err.get('source_line'), err.get('column'))}"
        f"</td></tr>"
    )


def _check_rows(doc: dict, lines: list[str], lang: str) -> str:
    rows = []
    for c in doc["checks"]:
        measured = "".join(f"<div>{_e(m)}</div>" for m in measured_in_words(c, lang))
        findings = "".join(_finding(f, c["message"], lines, lang) for f in c["findings"])
        rows.append(
            f'<tr class="check" data-check="{_e(c["id"])}">'
            f'<td style="vertical-align:top;text-align:left;padding:2px 0">{_badge(c["status"], lang)}</td>'
            f'<td style="vertical-align:top;text-align:left;font-weight:bold;padding:2px 8px">'
            f"{_e(check_name(c['id'], lang))}</td>"
            f'<td style="text-align:left;padding:2px 4px"><div>{_prose(c["message"])}</div>'
            f'<div style="opacity:.8">{measured}</div>{findings}</td></tr>'
        )
    return "".join(rows)


def _printed(doc: dict, lang: str) -> str:
    text = doc["output"].strip()
    if not text:
        return ""
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + "\n..."
    return (
        f'<details class="output"><summary>{_e(phrase("report.printed", lang))}</summary>'
        f'<pre style="{CODE}">{_e(printable(text))}</pre></details>'
    )


def grading_html(result: GradingResult, source: str, lang: str = "en", note: str = "") -> str:
    """The verdict in `lang` (the grader's messages from its catalog), for a notebook cell's output."""
    doc = localized(result.to_dict(), lang)
    lines = source.splitlines()
    loss = doc["plots"].get("loss") or {}
    chart = loss_svg(loss.get("submission", []), loss.get("baseline", []), lang) if loss else ""
    colour = BADGE[PASS] if doc["status"] == PASS else BADGE[FAIL]
    head = phrase(
        "report.header",
        lang,
        lesson=doc["exercise"],
        device=doc["device"],
        dtype=doc["amp_dtype"],
        sandbox=doc["sandbox"],
    )
    return (
        f'<div class="amp-dojo-result" data-status="{_e(doc["status"])}" style="line-height:1.45">'
        f'<div style="margin-bottom:6px">{_e(head)}</div>'
        + (f'<div style="opacity:.7">{_e(note)}</div>' if note else "")
        + f'<table style="border-collapse:collapse;margin:0">{_error(doc, lines, lang)}'
        f"{_check_rows(doc, lines, lang)}</table>"
        + (f'<div class="chart" style="margin:8px 0">{chart}</div>' if chart else "")
        + _printed(doc, lang)
        + f'<div class="summary" style="margin-top:6px;font-weight:bold;color:{colour}">'
        f"{_e(summary_in_words(doc, lang))}</div></div>"
    )


def progress_html(lesson: str, stage_text: str, lang: str = "en") -> str:
    return (
        f'<div class="amp-dojo-progress" style="opacity:.8">'
        f"{_e(phrase('notebook.grading', lang, lesson=lesson, stage=stage_text))}&hellip;</div>"
    )

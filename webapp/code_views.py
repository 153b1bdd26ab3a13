"""A submission's code as highlighted HTML (Pygments, which escapes it), made
once when the submission is stored, so that an instructor's page with every
submission of a learner does not highlight them all on each view. Submissions
stored before this existed are highlighted when first shown, and kept."""

from __future__ import annotations

import logging

from webapp import content

log = logging.getLogger("amp_dojo.code_views")


def remember(db, submission_id: str, code: str) -> None:
    """After the submission is stored: a failure here costs a later view some time, never the submission."""
    try:
        db.execute("INSERT INTO code_views (submission_id, html) VALUES (?, ?) ON CONFLICT DO NOTHING",
                   (submission_id, str(content.highlight_code(code))))
    except Exception:
        log.exception("could not keep the highlighted code of %s", submission_id)


def of_submissions(db, rows: list) -> dict[str, str]:
    """submission id -> highlighted HTML for these rows (each with id and code)."""
    if not rows:
        return {}
    marks = ",".join("?" * len(rows))
    views = {r["submission_id"]: r["html"] for r in db.execute(
        f"SELECT submission_id, html FROM code_views WHERE submission_id IN ({marks})", tuple(r["id"] for r in rows))}
    for row in rows:
        if row["id"] not in views:
            remember(db, row["id"], row["code"])
            views[row["id"]] = str(content.highlight_code(row["code"]))
    return views

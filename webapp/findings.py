"""The mistakes graded submissions made, kept beside their result documents:
one row per error finding (its check, id, line and message, with the
submission's learner, lesson and time, and whether the same id came earlier in
that submission, so that submissions are counted without DISTINCT), written
when the collector accepts a result, so that a course's dashboard ranks the class's mistakes from an index
instead of parsing thousands of documents."""

from __future__ import annotations

import json


def rows(result: dict) -> list[tuple]:
    """(check id, finding id, line, English message, unworded message as JSON or None) of every finding that
    is not advice (`info`)."""
    found = []
    for check in result.get("checks") or []:
        for finding in check.get("findings") or []:
            if finding.get("severity", "error") != "info" and finding.get("id"):
                line = finding.get("line")
                text = finding.get("text") if isinstance(finding.get("text"), dict) else {}
                found.append(
                    (
                        str(check.get("id")),
                        str(finding["id"]),
                        line if isinstance(line, int) else None,
                        finding.get("message"),
                        json.dumps(text["message"]) if text.get("message") else None,
                    )
                )
    return found


def record(db, row, result: dict) -> None:
    """Inside the transaction that accepts the result, so a result is indexed exactly once."""
    seen = set()
    for check_id, finding_id, line, message, text in rows(result):
        db.execute(
            "INSERT INTO findings (submission_id, learner, lesson, created_at, check_id, finding_id, line, "
            "message, text, repeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row["id"],
                row["learner"],
                row["lesson"],
                row["created_at"],
                check_id,
                finding_id,
                line,
                message,
                text,
                int(finding_id in seen),
            ),
        )
        seen.add(finding_id)


def message(row, lang: str) -> str | None:
    """A finding's message in `lang` (grader/wording/catalog.py), else as the grader wrote it in English."""
    if row["text"]:
        from grader.wording.catalog import value_in

        try:
            return str(value_in(json.loads(row["text"]), lang))
        except ValueError:
            pass
    return row["message"]


def of_submissions(db, ids: list[str]) -> dict[str, list]:
    """submission id -> its finding rows, in the order the grader reported them."""
    if not ids:
        return {}
    found: dict[str, list] = {sid: [] for sid in ids}
    marks = ",".join("?" * len(ids))
    for row in db.execute(f"SELECT * FROM findings WHERE submission_id IN ({marks}) ORDER BY id", tuple(ids)):
        found[row["submission_id"]].append(row)
    return found

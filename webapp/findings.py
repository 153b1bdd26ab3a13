"""The mistakes graded submissions made, kept beside their result documents:
one row per error finding (its check, id, line and message, with the
submission's learner, lesson and time, and whether the same id came earlier in
that submission, so that submissions are counted without DISTINCT), written
when the collector accepts a result, so that a course's dashboard ranks the class's mistakes from an index
instead of parsing thousands of documents."""

from __future__ import annotations

import json

from webapp.i18n import gettext, noop_gettext

ERROR_CHECK = "error"  # the check id of a row that is the result's error, not a check's finding
ERROR_PREFIX = "error:"  # its finding id: "error:" and the error's kind (docs/results.md, the error object)
NOT_MISTAKES = ("cancelled", "internal", "lesson")  # stopped by the learner, the grader or the lesson: no mistake
ERROR_LABELS = {
    "syntax": noop_gettext("Syntax error"),
    "import": noop_gettext("Error while importing the file"),
    "entrypoint": noop_gettext("The function to grade is missing"),
    "signature": noop_gettext("The function has the wrong parameters"),
    "exception": noop_gettext("Exception during a training step"),
    "return": noop_gettext("The function does not return the loss"),
    "nonfinite": noop_gettext("The loss became NaN or infinite"),
    "oom": noop_gettext("Out of memory"),
    "timeout": noop_gettext("Time limit exceeded"),
    "exit": noop_gettext("The code ended the process"),
    "crash": noop_gettext("The process crashed"),
    "protocol": noop_gettext("The code disturbed the grader's channel"),
    "tampering": noop_gettext("The code replaced the grader's instruments"),
}


def error_row(result: dict) -> tuple | None:
    """The result's error (a syntax error, an exception, a timeout...) as a finding row whose id is its kind, so
    that errors are counted among the class's mistakes, by kind."""
    error = result.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("kind"), str) or error["kind"] in NOT_MISTAKES:
        return None
    line = error.get("line")
    parts = error.get("parts")
    return (
        ERROR_CHECK,
        ERROR_PREFIX + error["kind"],
        line if isinstance(line, int) else None,
        error.get("message") if isinstance(error.get("message"), str) else None,
        json.dumps(parts) if isinstance(parts, list) and parts else None,
    )


def is_error(finding_id: str) -> bool:
    return finding_id.startswith(ERROR_PREFIX)


def label(finding_id: str, lang: str, message: str | None = None) -> str:
    """What the dashboard calls a mistake, in `lang`: an error by its kind in words; a finding by its short
    wording in the grader's catalog (grader/wording/: `<id>.static`, else `<id>` where it needs no values),
    else by `message` (the finding's own, already in `lang`). Its id is only ever a secondary detail."""
    if not is_error(finding_id):
        from grader.wording.catalog import EN, render

        for key in (f"{finding_id}.static", finding_id):
            if key in EN:
                text = render(key, {}, lang)
                if text != key:
                    return text
        return message or finding_id
    kind = finding_id[len(ERROR_PREFIX) :]
    if kind in ERROR_LABELS:
        return gettext(ERROR_LABELS[kind], lang)
    return gettext("The code stopped ({kind})", lang, kind=kind)


def rows(result: dict) -> list[tuple]:
    """(check id, finding id, line, English message, unworded message as JSON or None) of every finding that
    is not advice (`info`), and of the result's error (`error_row`)."""
    found = []
    error = error_row(result)
    if error is not None:
        found.append(error)
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
            text = json.loads(row["text"])
            if isinstance(text, list):  # an error's parts, which make one sentence (grader/wording/phrases.py)
                return " ".join(str(value_in(part, lang)) for part in text)
            return str(value_in(text, lang))
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

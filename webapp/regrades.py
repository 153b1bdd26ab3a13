"""Regrading a course lesson after its lesson file or the grader changed: the web app's side (the worker's is
webapp/regrade_jobs.py). `start` grades every graded submission of the course's learners on the lesson again
in the background; the new verdicts wait beside the old ones in `regrade_items` (a preview: who would go from
pass to fail and from fail to pass, with the new findings) until an instructor applies them. Applying makes
the new verdicts the submissions' own, so the gradebook (and whatever reads a learner's record) follows them,
while the old verdict of each submission stays in its item: the history keeps both."""

from __future__ import annotations

import json
import logging
import time

from webapp import bounds, findings, learner_lessons, signals, store
from webapp.collector import stamp
from webapp.db import transaction
from webapp.i18n import noop_gettext
from webapp.regrade_jobs import cancel_key

log = logging.getLogger(__name__)

RUNNING, PREVIEWED, APPLIED, CANCELLED = "running", "previewed", "applied", "cancelled"


class RegradeError(Exception):
    """A request the regrade's state refuses (applying a running one, say); `message` is English, translated
    where shown."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _graded(db, course_id: int, lesson: str) -> list:
    """The course's learners' graded submissions of the lesson, oldest first."""
    return db.execute(
        "SELECT s.id, s.learner, s.code, s.result_status, s.score FROM submissions s "
        "JOIN users u ON u.learner = s.learner JOIN enrollments e ON e.user_id = u.id AND e.course_id = ? "
        "WHERE s.lesson = ? AND s.status = 'done' AND s.result_status IS NOT NULL ORDER BY s.created_at, s.id",
        (course_id, lesson),
    ).fetchall()


def start(db, queue, config, course_id: int, lesson: str, requested_by: str) -> int:
    """Records the regrade and its items, then enqueues its first step; returns its id."""
    rows, now = _graded(db, course_id, lesson), time.time()
    with transaction(db):
        db.execute(
            "INSERT INTO regrades (course_id, lesson, requested_by, state, created_at, finished_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (course_id, lesson, requested_by, RUNNING if rows else PREVIEWED, now, None if rows else now),
        )
        rid = db.execute("SELECT max(id) FROM regrades WHERE course_id = ?", (course_id,)).scalar()
        for position, r in enumerate(rows):
            db.execute(
                "INSERT INTO regrade_items (regrade_id, submission_id, learner, position, old_status, old_score) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (rid, r["id"], r["learner"], position, r["result_status"], r["score"]),
            )
    if rows:
        queue.enqueue_regrade(
            {
                "regrade_id": rid,
                "exercise_id": lesson,
                "device": config["DEVICE"],
                "sandbox": config["SANDBOX"],
                "allow_local": bool(config["ALLOW_LOCAL_SANDBOX"]),
                "items": [{"submission_id": r["id"], "code": r["code"]} for r in rows],
            }
        )
    return rid


def get(db, rid: int):
    return db.execute("SELECT * FROM regrades WHERE id = ?", (rid,)).fetchone()


def of_course(db, course_id: int, limit: int = 10) -> list:
    return db.execute(
        "SELECT * FROM regrades WHERE course_id = ? ORDER BY id DESC LIMIT ?", (course_id, limit)
    ).fetchall()


def collect(db, queue, config, rid: int) -> None:
    """Copies the new verdicts the worker reported into the regrade's items (each bounded as a grading's is,
    MAX_RESULT_BYTES); the last one ends the preview."""
    regrade = get(db, rid)
    if regrade is None or regrade["state"] != RUNNING:
        return
    waiting = db.execute(
        "SELECT submission_id FROM regrade_items WHERE regrade_id = ? AND graded_at IS NULL", (rid,)
    ).fetchall()
    for item in waiting:
        outcome = queue.peek("regrade", item["submission_id"], rid)
        if outcome is not None:
            _store(db, rid, item["submission_id"], outcome, int(config["MAX_RESULT_BYTES"]))
            queue.huey.delete(_key(item["submission_id"], rid))
    with transaction(db):
        db.execute(
            "UPDATE regrades SET state = ?, finished_at = ? WHERE id = ? AND state = ? AND NOT EXISTS "
            "(SELECT 1 FROM regrade_items WHERE regrade_id = ? AND graded_at IS NULL)",
            (PREVIEWED, time.time(), rid, RUNNING, rid),
        )


def _key(sid: str, rid: int) -> str:
    from webapp.queue import key

    return key("regrade", sid, rid)


def _store(db, rid: int, sid: str, outcome, limit: int) -> None:
    result = outcome.get("result") if isinstance(outcome, dict) and outcome.get("status") == "done" else None
    with transaction(db):
        if isinstance(result, dict):
            result = bounds.result(result, limit)
            lesson_hash, version = stamp(outcome)
            db.execute(
                "UPDATE regrade_items SET new_status = ?, new_score = ?, new_result = ?, lesson_hash = ?, "
                "grader_version = ?, graded_at = ? WHERE regrade_id = ? AND submission_id = ?",
                (result["status"], result["score"], json.dumps(result), lesson_hash, version, time.time(), rid, sid),
            )
        else:
            reason = bounds.text(outcome.get("reason") if isinstance(outcome, dict) else None) or "grading failed"
            db.execute(
                "UPDATE regrade_items SET error = ?, graded_at = ? WHERE regrade_id = ? AND submission_id = ?",
                (reason, time.time(), rid, sid),
            )


def progress(db, rid: int) -> dict:
    done, total = db.execute(
        "SELECT sum(CASE WHEN graded_at IS NULL THEN 0 ELSE 1 END), count(*) FROM regrade_items WHERE regrade_id = ?",
        (rid,),
    ).fetchone()
    return {"done": int(done or 0), "total": int(total or 0), "state": get(db, rid)["state"]}


def flips(db, rid: int, lang: str = "en") -> list[dict]:
    """The learners whose standing on the lesson (passed: any graded submission passes) the new verdicts
    change, with the new findings of their latest regraded submission. A submission the grader could not
    grade again keeps its old verdict."""
    items = db.execute(
        "SELECT i.*, u.id AS user_id, u.username FROM regrade_items i JOIN users u ON u.learner = i.learner "
        "WHERE i.regrade_id = ? ORDER BY u.username_key, i.position",
        (rid,),
    ).fetchall()
    learners: dict[str, list] = {}
    for item in items:
        learners.setdefault(item["learner"], []).append(item)
    out = []
    for own in learners.values():
        before = any(i["old_status"] == "pass" for i in own)
        after = any((i["new_status"] or i["old_status"]) == "pass" for i in own)  # not regraded: as it was
        if before != after:
            latest = own[-1]
            out.append(
                {
                    "user_id": latest["user_id"],
                    "username": latest["username"],
                    "learner": latest["learner"],
                    "direction": "pass_to_fail" if before else "fail_to_pass",
                    "submission_id": latest["submission_id"],
                    "findings": new_findings(latest["new_result"], lang),
                }
            )
    return out


def new_findings(document: str | None, lang: str) -> list[dict]:
    """The failing checks' findings of a new verdict, worded in `lang`."""
    if not document:
        return []
    from grader.wording.phrases import localized

    result = localized(json.loads(document), lang)
    return [
        {"id": f.get("id"), "message": f.get("message"), "line": f.get("line")}
        for check in result.get("checks", [])
        if check.get("status") == "fail"
        for f in check.get("findings", [])
    ]


def cancel(db, queue, rid: int) -> bool:
    """Stops a running regrade: the worker reads the cancel key before its next step (and stops the current
    grading); the verdicts already regraded are kept in the items, never applied."""
    with transaction(db):
        cur = db.execute(
            "UPDATE regrades SET state = ?, finished_at = ? WHERE id = ? AND state = ?",
            (CANCELLED, time.time(), rid, RUNNING),
        )
    if cur.rowcount == 1:
        queue.put(*cancel_key(rid), {"at": time.time()})
    return cur.rowcount == 1


def apply(db, rid: int, config=None) -> int:
    """Makes a finished preview's new verdicts the submissions' own; returns how many changed. Each replaced
    verdict (document, hash and version) is kept in its item, and the learners' records are computed again."""
    regrade = get(db, rid)
    if regrade is None or regrade["state"] != PREVIEWED:
        raise RegradeError(noop_gettext("Only a finished preview can be applied."))
    changed, learners = 0, set()
    with transaction(db):
        if (
            db.execute(
                "UPDATE regrades SET state = ?, applied_at = ? WHERE id = ? AND state = ?",
                (APPLIED, time.time(), rid, PREVIEWED),
            ).rowcount
            != 1
        ):
            raise RegradeError(noop_gettext("Only a finished preview can be applied."))
        items = db.execute(
            "SELECT * FROM regrade_items WHERE regrade_id = ? AND new_result IS NOT NULL", (rid,)
        ).fetchall()
        for item in items:
            row = db.execute("SELECT * FROM submissions WHERE id = ?", (item["submission_id"],)).fetchone()
            if row is None:
                continue
            db.execute(
                "UPDATE regrade_items SET old_result = ?, old_lesson_hash = ?, old_grader_version = ? "
                "WHERE regrade_id = ? AND submission_id = ?",
                (row["result"], row["lesson_hash"], row["grader_version"], rid, row["id"]),
            )
            db.execute(
                "UPDATE submissions SET result = ?, result_status = ?, score = ?, lesson_hash = ?, "
                "grader_version = ? WHERE id = ?",
                (
                    item["new_result"],
                    item["new_status"],
                    item["new_score"],
                    item["lesson_hash"],
                    item["grader_version"],
                    row["id"],
                ),
            )
            db.execute("DELETE FROM findings WHERE submission_id = ?", (row["id"],))
            findings.record(db, row, json.loads(item["new_result"]))
            changed += item["new_status"] != item["old_status"]
            learners.add(row["learner"])
        for learner in learners:
            learner_lessons.recompute(db, learner, regrade["lesson"])
    if config is None:
        return changed
    for item in items:  # outside the transaction, as the collector does: an LMS's gradebook follows the new verdicts
        row = db.execute("SELECT * FROM submissions WHERE id = ?", (item["submission_id"],)).fetchone()
        if row is not None:
            try:
                signals.graded.send(None, db=db, row=row, result=json.loads(item["new_result"]), config=config)
            except Exception:  # a listener's failure never undoes the applied verdicts
                log.exception("a listener of the regrade of %s failed", row["id"])
    return changed


def history(db, sid: str) -> list[dict]:
    """A submission's verdicts, oldest first: each one a regrade replaced, then the current one."""
    replaced = db.execute(
        "SELECT i.old_status, i.old_score, i.old_lesson_hash, i.old_grader_version, r.applied_at, r.id "
        "FROM regrade_items i JOIN regrades r ON r.id = i.regrade_id WHERE i.submission_id = ? "
        "AND r.state = ? AND i.new_result IS NOT NULL ORDER BY r.applied_at",
        (sid, APPLIED),
    ).fetchall()
    row = store.get(db, sid)
    verdicts = [
        {
            "status": r[0],
            "score": r[1],
            "lesson_hash": r[2],
            "grader_version": r[3],
            "replaced_at": r[4],
            "regrade_id": r[5],
        }
        for r in replaced
    ]
    verdicts.append(
        {
            "status": row["result_status"],
            "score": row["score"],
            "lesson_hash": row["lesson_hash"],
            "grader_version": row["grader_version"],
            "replaced_at": None,
            "regrade_id": None,
        }
    )
    return verdicts

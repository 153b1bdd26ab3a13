"""Copies what grading workers wrote into the queue's storage into the web
app's database, and watches their leases.

It runs on every status/stream request (for that submission) and in a
background thread (for all active ones; only this one looks for lost tasks,
each by its key in the queue, webapp/queue.py is_pending). Every change is a compare-and-set on
(status, attempt) inside BEGIN IMMEDIATE, and events are keyed by
(submission, attempt, source), so two app processes collecting at once
neither duplicate events nor accept a result twice. Only the current
attempt's keys are read: a result from an attempt the app gave up on is never
accepted, so each submission is graded exactly once in the database."""

from __future__ import annotations

import json
import logging
import threading
import time

from webapp import bounds, findings, learner_lessons, metrics, signals, store
from webapp.db import connect, transaction
from webapp.dispatch import dispatch, take_back_cancelled

log = logging.getLogger("amp_dojo.collector")


# What a pass reads of each submission: not its code (up to MAX_CODE_BYTES each, for every active one, every second)
COLUMNS = "id, learner, status, attempt, enqueued_at, hb_value"


def collect(db, queue, config, ids: list[str] | None = None) -> None:
    """One pass over the active submissions (the background collector), or over just `ids` (a request or a
    stream, for the submission it shows). Only the background pass looks for lost tasks and takes back the
    tasks of cancellations the queue could not be told of: a poll's cost never depends on the queue."""
    if ids is not None and not ids:
        return  # `IN ()` is SQLite's dialect only
    sql = f"SELECT {COLUMNS} FROM submissions WHERE status IN ('queued', 'running')"
    params: tuple = ()
    if ids is not None:
        sql += f" AND id IN ({','.join('?' * len(ids))})"
        params = tuple(ids)
    for row in db.execute(sql, params).fetchall():
        try:
            collect_one(db, queue, config, row, background=ids is None)
        except Exception:  # one bad record must not stop the others
            log.exception("collecting submission %s failed", row["id"])
    if ids is None:
        take_back_cancelled(db, queue, config)


def collect_one(db, queue, config, row, background: bool = False) -> None:
    sid, attempt = row["id"], row["attempt"]
    if row["enqueued_at"] is None:  # waiting for its learner's previous submission (or for the queue to be up)
        dispatch(db, queue, config, row["learner"])
        return
    # The result first: a worker writes it after its last event, so events read
    # afterwards are complete whenever a result was seen.
    outcome = queue.peek("result", sid, attempt)
    worker_events = queue.peek("events", sid, attempt) or []
    beat = queue.peek("hb", sid, attempt)
    if outcome is not None:
        take_outcome(db, queue, config, row, worker_events, outcome)
        dispatch(db, queue, config, row["learner"])  # the learner's next one, if any, joins the queue now
        return
    note_progress(db, row, worker_events, beat, config)
    expire_lease(db, queue, config, sid, attempt)
    if background and row["status"] == "queued" and beat is None:
        recover_lost_task(db, queue, config, row)


STORE_TRIES = 3  # passes at storing one attempt's outcome before the submission ends as an error
_STORE_FAILURES: dict[tuple[str, int], int] = {}  # (submission, attempt) -> this process's failed passes


def take_outcome(db, queue, config, row, worker_events, outcome) -> None:
    """accept(), tried on at most STORE_TRIES passes: an outcome the database refuses ends the submission as
    an error instead of being retried (and logged) every second forever. Each try is its own transaction,
    rolled back on failure, so no lock is held between tries."""
    key = (row["id"], row["attempt"])
    try:
        accept(db, row, worker_events, outcome, config)
    except Exception as exc:  # noqa: BLE001 - whatever the outcome holds, the submission must end
        tries = _STORE_FAILURES.get(key, 0) + 1
        if tries < STORE_TRIES:
            _STORE_FAILURES[key] = tries
            log.debug("submission %s: storing the result failed (try %s): %s", key[0], tries, _cause(exc))
            return
        _STORE_FAILURES.pop(key, None)
        reason = f"the grading result could not be stored: {_cause(exc)}"
        log.error("submission %s attempt %s: %s (%s tries)", key[0], key[1], reason, tries)
        give_up(db, row, reason, now=time.time())
    else:
        _STORE_FAILURES.pop(key, None)
    queue.forget(*key)


def _cause(exc: BaseException) -> str:
    """One short line: a database error's own message, without SQLAlchemy's statement and parameters."""
    inner = getattr(exc, "orig", None) or exc
    return bounds.marker(" ".join(f"{type(inner).__name__}: {inner}".split()), 300)


def give_up(db, row, reason: str, now: float) -> None:
    with transaction(db):
        _end_as_error(db, row["id"], row["attempt"], reason, now)


def _end_as_error(db, sid: str, attempt: int, reason: str, now: float) -> None:
    """Inside the caller's transaction: the attempt ends as an error, with its `done` event, unless it had ended."""
    if _fail(db, sid, attempt, reason, now).rowcount == 1:
        _insert_done(db, sid, attempt, {"status": "error", "error": reason}, now)
        _count(db, sid, "platform_error")


def _known_worker_events(db, sid: str, attempt: int) -> int:
    return db.execute(
        "SELECT count(*) FROM events WHERE submission_id = ? AND attempt = ? AND source LIKE 'w:%'", (sid, attempt)
    ).fetchone()[0]


def event_rows(worker_events, start: int, config) -> list[tuple[int, str, str]]:
    """(position, type, data as JSON) of the worker's events from `start`, shaped before any transaction:
    each at most MAX_EVENT_BYTES, and no more than MAX_EVENTS_PER_ATTEMPT stored per attempt."""
    if not isinstance(worker_events, list):
        return []
    limit, cap = int(config["MAX_EVENT_BYTES"]), int(config["MAX_EVENTS_PER_ATTEMPT"])
    shaped = []
    for n in range(start, min(len(worker_events), cap)):
        kind, data = bounds.event(worker_events[n], limit)
        shaped.append((n, kind, json.dumps(data)))
    return shaped


def _insert_events(db, sid: str, attempt: int, shaped: list[tuple[int, str, str]], now: float) -> None:
    for n, kind, data in shaped:
        db.execute(
            "INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (sid, attempt, f"w:{n}", kind, data, now),
        )


def _insert_done(db, sid: str, attempt: int, data: dict, now: float) -> None:
    db.execute(
        "INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
        "VALUES (?, ?, 'done', 'done', ?, ?) ON CONFLICT DO NOTHING",
        (sid, attempt, json.dumps(data), now),
    )


def _verdict(outcome) -> tuple[dict | None, str | None]:
    """(the result document to store, bounded) or (None, why grading failed) of a worker's outcome."""
    if not isinstance(outcome, dict):
        return None, "the grading worker sent a malformed outcome"
    if outcome.get("status") != "done":
        return None, bounds.text(outcome.get("reason")) or "grading failed"
    if not isinstance(outcome.get("result"), dict):
        return None, "the grading worker sent a malformed result"
    return outcome["result"], None


def accept(db, row, worker_events: list[dict], outcome: dict, config) -> bool:
    """Records the attempt's outcome once; False if another process already did. Everything is shaped
    (webapp/bounds.py) before the write lock is taken."""
    sid, attempt, now = row["id"], row["attempt"], time.time()
    shaped = event_rows(worker_events, _known_worker_events(db, sid, attempt), config)
    result, reason = _verdict(outcome)
    worker = bounds.text(outcome.get("worker"), 200) if isinstance(outcome, dict) else None
    if result is not None:
        result = bounds.result(result, int(config["MAX_RESULT_BYTES"]))
        document = json.dumps(result)
    with transaction(db):
        _insert_events(db, sid, attempt, shaped, now)
        if result is not None:
            cur = db.execute(
                "UPDATE submissions SET status = 'done', result = ?, result_status = ?, score = ?, graded_by = ?, "
                "finished_at = ?, started_at = coalesce(started_at, ?), lesson_hash = ?, grader_version = ? "
                "WHERE id = ? AND attempt = ? AND status IN ('queued', 'running')",
                (document, result["status"], result["score"], worker, now, now, *stamp(outcome), sid, attempt),
            )
            done = {"status": "done", "result_status": result["status"], "score": result["score"]}
        else:
            cur = _fail(db, sid, attempt, reason, now, worker)
            done = {"status": "error", "error": reason}
        if cur.rowcount == 1:
            _insert_done(db, sid, attempt, done, now)
            if result is not None:  # as the row is now: a sign-up may have re-owned it since
                current = db.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
                findings.record(db, current, result)
                learner_lessons.graded(db, current, result)
    if cur.rowcount == 1:
        _count(db, sid, result["status"] if result is not None else "platform_error")
        if result is not None:  # outside the transaction: a listener (an LMS's gradebook) may enqueue its own work
            try:
                signals.graded.send(None, db=db, row=current, result=result, config=config)
            except Exception:  # a listener's failure never undoes or hides the stored verdict
                log.exception("a listener of the grading of %s failed", sid)
    return cur.rowcount == 1


def stamp(outcome: dict) -> tuple[str | None, str | None]:
    """The lesson hash and grader version a worker graded with (webapp/grading.py provenance), bounded."""
    return bounds.text(outcome.get("lesson_hash"), 100), bounds.text(outcome.get("grader_version"), 100)


def _count(db, sid: str, status: str) -> None:
    """The metrics of a grading that just ended (webapp/metrics.py): counted by the process that stored it."""
    row = db.execute("SELECT lesson, started_at, finished_at FROM submissions WHERE id = ?", (sid,)).fetchone()
    if row is not None:
        started, finished = row["started_at"], row["finished_at"]
        metrics.graded(row["lesson"], status, finished - started if started and finished else None)


def _fail(db, sid: str, attempt: int, reason: str, now: float, worker: str | None = None):
    return db.execute(
        "UPDATE submissions SET status = 'error', error = ?, graded_by = ?, finished_at = ? "
        "WHERE id = ? AND attempt = ? AND status IN ('queued', 'running')",
        (reason, worker, now, sid, attempt),
    )


def note_progress(db, row, worker_events: list[dict], beat, config) -> None:
    """New events and a changed heartbeat; the lease clock is this app's, never the worker's."""
    sid, attempt = row["id"], row["attempt"]
    beat_value = json.dumps(bounds.plain(beat), sort_keys=True)[:1000] if beat is not None else None
    fresh_beat = beat_value is not None and beat_value != row["hb_value"]
    shaped = event_rows(worker_events, _known_worker_events(db, sid, attempt), config)
    if not fresh_beat and not shaped:
        return
    now = time.time()
    with transaction(db):
        _insert_events(db, sid, attempt, shaped, now)
        if fresh_beat:
            db.execute(
                "UPDATE submissions SET status = 'running', hb_value = ?, hb_seen_at = ?, "
                "started_at = coalesce(started_at, ?) WHERE id = ? AND attempt = ? "
                "AND status IN ('queued', 'running') AND (hb_value IS NULL OR hb_value != ?)",
                (beat_value, now, now, sid, attempt, beat_value),
            )


def expire_lease(db, queue, config, sid: str, attempt: int) -> None:
    """A running attempt whose heartbeat stopped: grade it again, or give up after MAX_ATTEMPTS."""
    now = time.time()
    deadline = now - float(config["LEASE_SECONDS"])
    quick = db.execute(
        "SELECT 1 FROM submissions WHERE id = ? AND attempt = ? AND status = 'running' AND hb_seen_at < ?",
        (sid, attempt, deadline),
    ).fetchone()
    if quick is None:
        return
    with transaction(db):
        row = db.execute(
            "SELECT * FROM submissions WHERE id = ? AND attempt = ? AND status = 'running' AND hb_seen_at < ?",
            (sid, attempt, deadline),
        ).fetchone()
        if row is None:  # another process got here first, or a beat arrived
            return
        retry_or_fail(db, queue, config, row, now)


def retry_or_fail(db, queue, config, row, now: float) -> None:
    """Inside the caller's transaction: attempt+1, or an error once MAX_ATTEMPTS were spent."""
    sid, attempt = row["id"], row["attempt"]
    if attempt >= int(config["MAX_ATTEMPTS"]):
        times = "twice" if attempt == 2 else f"{attempt} times"
        reason = f"the grading worker stopped {times} while grading this submission"
        _end_as_error(db, sid, attempt, reason, now)
        log.warning("submission %s: %s", sid, reason)
        return  # the learner's next submission is handed over by the next pass (outside this transaction)
    requeue(db, queue, config, row, now)


_MISSING_SINCE: dict[tuple[str, int], float] = {}  # (submission, attempt) -> when this process first saw
# its task neither in the queue nor started


def recover_lost_task(db, queue, config, row) -> None:
    """A worker that dies after taking a task off the queue but before its first heartbeat leaves a
    submission `queued` with no task anywhere. Once the queue has not held the attempt's task, and no
    heartbeat came, for LEASE_SECONDS in a row, the task is counted as lost and graded again. (Counted from
    when it was first seen missing, not from when it was enqueued: a worker that has just taken a task has
    not yet sent its first beat.)"""
    now = time.time()
    lease = float(config["LEASE_SECONDS"])
    attempt_key = (row["id"], row["attempt"])
    if row["enqueued_at"] > now - lease or queue.is_pending(row["id"], row["attempt"]):
        _MISSING_SINCE.pop(attempt_key, None)
        return
    if now - _MISSING_SINCE.setdefault(attempt_key, now) < lease:
        return
    _MISSING_SINCE.pop(attempt_key, None)
    with transaction(db):
        fresh = db.execute(
            "SELECT * FROM submissions WHERE id = ? AND attempt = ? AND status = 'queued'", (row["id"], row["attempt"])
        ).fetchone()
        if fresh is not None and queue.peek("hb", row["id"], row["attempt"]) is None:
            log.warning("submission %s: attempt %s left the queue but never started", row["id"], row["attempt"])
            retry_or_fail(db, queue, config, fresh, now)


def requeue(db, queue, config, row, now: float) -> None:
    """Attempt+1, inside the caller's transaction: if enqueueing fails, nothing changed."""
    sid, attempt = row["id"], row["attempt"] + 1
    db.execute(
        "UPDATE submissions SET status = 'queued', attempt = ?, queued_at = ?, enqueued_at = ?, "
        "started_at = NULL, hb_value = NULL, hb_seen_at = NULL WHERE id = ?",
        (attempt, now, now, sid),
    )
    db.execute(
        "INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
        "VALUES (?, ?, 'retry', 'progress', ?, ?) ON CONFLICT DO NOTHING",
        (
            sid,
            attempt,
            json.dumps(
                {"stage": "retry", "attempt": attempt, "reason": "the grading worker stopped responding; grading again"}
            ),
            now,
        ),
    )
    queue.forget(sid, row["attempt"])  # the attempt given up on: its keys (its task's, as big as its code) go
    queue.enqueue(store.payload(db.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone(), config))
    log.warning("submission %s: worker lease expired, re-enqueued as attempt %s", sid, attempt)


class CollectorThread(threading.Thread):
    """Keeps collecting while nobody watches (leases, progress badges)."""

    def __init__(self, app):
        super().__init__(name="amp-dojo-collector", daemon=True)
        self.app = app
        self.stopped = threading.Event()

    def run(self):
        interval = float(self.app.config["COLLECT_INTERVAL"])
        queue = self.app.extensions["amp_dojo_queue"]
        db = connect(self.app.config["DATABASE"])
        try:
            while not self.stopped.wait(interval):
                try:
                    collect(db, queue, self.app.config)
                except Exception:
                    log.exception("collector pass failed")
        finally:
            db.close()

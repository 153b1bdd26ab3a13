"""Copies what grading workers wrote into the queue's storage into the web
app's database, and watches their leases.

It runs on every status/stream request (for that submission) and in a
background thread (for all active ones). Every change is a compare-and-set on
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

from webapp import findings, learner_lessons, store
from webapp.db import connect, transaction
from webapp.dispatch import dispatch

log = logging.getLogger("amp_dojo.collector")


def collect(db, queue, config, ids: list[str] | None = None) -> None:
    """One pass over the active submissions (or just `ids`)."""
    if ids is not None and not ids:
        return  # `IN ()` is SQLite's dialect only
    sql = "SELECT * FROM submissions WHERE status IN ('queued', 'running')"
    params: tuple = ()
    if ids is not None:
        sql += f" AND id IN ({','.join('?' * len(ids))})"
        params = tuple(ids)
    for row in db.execute(sql, params).fetchall():
        try:
            collect_one(db, queue, config, row)
        except Exception:  # one bad record must not stop the others
            log.exception("collecting submission %s failed", row["id"])


def collect_one(db, queue, config, row) -> None:
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
        if accept(db, row, worker_events, outcome):
            queue.forget(sid, attempt)
        dispatch(db, queue, config, row["learner"])  # the learner's next one, if any, joins the queue now
        return
    note_progress(db, row, worker_events, beat)
    expire_lease(db, queue, config, sid, attempt)
    if row["status"] == "queued" and beat is None:
        recover_lost_task(db, queue, config, row)


def _known_worker_events(db, sid: str, attempt: int) -> int:
    return db.execute("SELECT count(*) FROM events WHERE submission_id = ? AND attempt = ? AND source LIKE 'w:%'",
                      (sid, attempt)).fetchone()[0]


def _insert_events(db, sid: str, attempt: int, worker_events: list[dict], now: float) -> None:
    start = _known_worker_events(db, sid, attempt)
    for n, event in enumerate(worker_events[start:], start):
        db.execute("INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                   (sid, attempt, f"w:{n}", event["type"], json.dumps(event["data"]), now))


def _insert_done(db, sid: str, attempt: int, data: dict, now: float) -> None:
    db.execute("INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
               "VALUES (?, ?, 'done', 'done', ?, ?) ON CONFLICT DO NOTHING", (sid, attempt, json.dumps(data), now))


def accept(db, row, worker_events: list[dict], outcome: dict) -> bool:
    """Records the attempt's outcome once; False if another process already did."""
    sid, attempt, now = row["id"], row["attempt"], time.time()
    with transaction(db):
        _insert_events(db, sid, attempt, worker_events, now)
        if outcome.get("status") == "done":
            result = outcome["result"]
            cur = db.execute(
                "UPDATE submissions SET status = 'done', result = ?, result_status = ?, score = ?, graded_by = ?, "
                "finished_at = ?, started_at = coalesce(started_at, ?) "
                "WHERE id = ? AND attempt = ? AND status IN ('queued', 'running')",
                (json.dumps(result), result.get("status"), result.get("score"), outcome.get("worker"),
                 now, now, sid, attempt))
            done = {"status": "done", "result_status": result.get("status"), "score": result.get("score")}
        else:
            cur = _fail(db, sid, attempt, outcome.get("reason") or "grading failed", now, outcome.get("worker"))
            done = {"status": "error", "error": outcome.get("reason")}
        if cur.rowcount == 1:
            _insert_done(db, sid, attempt, done, now)
            if outcome.get("status") == "done":  # as the row is now: a sign-up may have re-owned it since
                current = db.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
                findings.record(db, current, outcome["result"])
                learner_lessons.graded(db, current, outcome["result"])
    return True


def _fail(db, sid: str, attempt: int, reason: str, now: float, worker: str | None = None):
    return db.execute("UPDATE submissions SET status = 'error', error = ?, graded_by = ?, finished_at = ? "
                      "WHERE id = ? AND attempt = ? AND status IN ('queued', 'running')",
                      (reason, worker, now, sid, attempt))


def note_progress(db, row, worker_events: list[dict], beat) -> None:
    """New events and a changed heartbeat; the lease clock is this app's, never the worker's."""
    sid, attempt = row["id"], row["attempt"]
    beat_value = json.dumps(beat, sort_keys=True) if beat is not None else None
    fresh_beat = beat_value is not None and beat_value != row["hb_value"]
    if not fresh_beat and len(worker_events) <= _known_worker_events(db, sid, attempt):
        return
    now = time.time()
    with transaction(db):
        _insert_events(db, sid, attempt, worker_events, now)
        if fresh_beat:
            db.execute("UPDATE submissions SET status = 'running', hb_value = ?, hb_seen_at = ?, "
                       "started_at = coalesce(started_at, ?) WHERE id = ? AND attempt = ? "
                       "AND status IN ('queued', 'running') AND (hb_value IS NULL OR hb_value != ?)",
                       (beat_value, now, now, sid, attempt, beat_value))


def expire_lease(db, queue, config, sid: str, attempt: int) -> None:
    """A running attempt whose heartbeat stopped: grade it again, or give up after MAX_ATTEMPTS."""
    now = time.time()
    deadline = now - float(config["LEASE_SECONDS"])
    quick = db.execute("SELECT 1 FROM submissions WHERE id = ? AND attempt = ? AND status = 'running' "
                       "AND hb_seen_at < ?", (sid, attempt, deadline)).fetchone()
    if quick is None:
        return
    with transaction(db):
        row = db.execute("SELECT * FROM submissions WHERE id = ? AND attempt = ? AND status = 'running' "
                         "AND hb_seen_at < ?", (sid, attempt, deadline)).fetchone()
        if row is None:  # another process got here first, or a beat arrived
            return
        retry_or_fail(db, queue, config, row, now)


def retry_or_fail(db, queue, config, row, now: float) -> None:
    """Inside the caller's transaction: attempt+1, or an error once MAX_ATTEMPTS were spent."""
    sid, attempt = row["id"], row["attempt"]
    if attempt >= int(config["MAX_ATTEMPTS"]):
        times = "twice" if attempt == 2 else f"{attempt} times"
        reason = f"the grading worker stopped {times} while grading this submission"
        _fail(db, sid, attempt, reason, now)
        _insert_done(db, sid, attempt, {"status": "error", "error": reason}, now)
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
        fresh = db.execute("SELECT * FROM submissions WHERE id = ? AND attempt = ? AND status = 'queued'",
                           (row["id"], row["attempt"])).fetchone()
        if fresh is not None and queue.peek("hb", row["id"], row["attempt"]) is None:
            log.warning("submission %s: attempt %s left the queue but never started", row["id"], row["attempt"])
            retry_or_fail(db, queue, config, fresh, now)


def requeue(db, queue, config, row, now: float) -> None:
    """Attempt+1, inside the caller's transaction: if enqueueing fails, nothing changed."""
    sid, attempt = row["id"], row["attempt"] + 1
    db.execute("UPDATE submissions SET status = 'queued', attempt = ?, queued_at = ?, enqueued_at = ?, "
               "started_at = NULL, hb_value = NULL, hb_seen_at = NULL WHERE id = ?", (attempt, now, now, sid))
    db.execute("INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
               "VALUES (?, ?, 'retry', 'progress', ?, ?) ON CONFLICT DO NOTHING",
               (sid, attempt, json.dumps({"stage": "retry", "attempt": attempt,
                                          "reason": "the grading worker stopped responding; grading again"}), now))
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

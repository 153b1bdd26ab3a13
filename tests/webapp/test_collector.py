"""The collector and the lease, with a scripted stand-in for the grading
worker: it writes the same keys into the queue's storage as webapp/grading.py."""

import threading
import time

import pytest

from webapp.collector import collect
from webapp.db import connect
from webapp.queue import GradingQueue

CODE = "def train_step(*args):\n    return 0.0\n"


class FakeWorker:
    """Writes claim, heartbeat, events and result keys like a real worker."""

    def __init__(self, queue, sid, attempt, name="fake:1"):
        self.queue, self.sid, self.attempt, self.name = queue, sid, attempt, name
        self.beat, self.events = 0, []
        assert queue.huey.dequeue() is not None  # takes the task off the queue
        assert queue.claim(sid, attempt, name)

    def heartbeat(self):
        self.beat += 1
        self.queue.put("hb", self.sid, self.attempt, {"beat": self.beat, "worker": self.name})

    def event(self, kind, **data):
        self.events.append({"type": kind, "data": data, "at": time.time()})
        self.queue.put("events", self.sid, self.attempt, self.events)

    def finish(self, status="pass"):
        result = {"status": status, "score": 1.0 if status == "pass" else 0.0, "checks": [], "output": ""}
        self.queue.put("result", self.sid, self.attempt,
                       {"status": "done", "result": result, "worker": self.name, "attempt": self.attempt})


@pytest.fixture
def lease_app(make_app):
    return make_app(LEASE_SECONDS=0.3, MAX_ATTEMPTS=2)


def row(app, sid):
    db = connect(app.config["DATABASE"])
    try:
        return dict(db.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone())
    finally:
        db.close()


def event_types(app, sid):
    db = connect(app.config["DATABASE"])
    try:
        return [(r["type"], r["attempt"]) for r in db.execute(
            "SELECT type, attempt FROM events WHERE submission_id = ? ORDER BY id", (sid,))]
    finally:
        db.close()


def run_collector(app, sid=None):
    db = connect(app.config["DATABASE"])
    try:
        collect(db, app.extensions["amp_dojo_queue"], app.config, [sid] if sid else None)
    finally:
        db.close()


def new_submission(app, submit):
    response = submit(app.test_client(), CODE)
    assert response.status_code == 202
    return response.get_json()["id"]


def test_heartbeat_marks_running_and_keeps_a_long_grading_alive(lease_app, submit):
    queue = lease_app.extensions["amp_dojo_queue"]
    sid = new_submission(lease_app, submit)
    worker = FakeWorker(queue, sid, 1)
    worker.heartbeat()
    run_collector(lease_app, sid)
    assert row(lease_app, sid)["status"] == "running"
    for _ in range(4):  # 0.6 s in all, twice the lease, with beats in between
        time.sleep(0.15)
        worker.heartbeat()
        run_collector(lease_app, sid)
    assert row(lease_app, sid)["status"] == "running" and row(lease_app, sid)["attempt"] == 1


def test_silent_worker_loses_the_lease_then_the_submission_errors_after_max_attempts(lease_app, submit):
    queue = lease_app.extensions["amp_dojo_queue"]
    sid = new_submission(lease_app, submit)
    first = FakeWorker(queue, sid, 1)
    first.heartbeat()
    run_collector(lease_app)
    time.sleep(0.4)
    run_collector(lease_app)
    r = row(lease_app, sid)
    assert (r["status"], r["attempt"]) == ("queued", 2) and queue.pending_count() == 1
    second = FakeWorker(queue, sid, 2)
    second.heartbeat()
    run_collector(lease_app)
    assert row(lease_app, sid)["status"] == "running"
    time.sleep(0.4)
    run_collector(lease_app)
    r = row(lease_app, sid)
    assert r["status"] == "error" and r["error"] == "the grading worker stopped twice while grading this submission"
    assert queue.pending_count() == 0
    first.finish()  # the lost workers come back too late: ignored
    second.finish()
    run_collector(lease_app)
    assert row(lease_app, sid)["status"] == "error"
    assert [t for t, _ in event_types(lease_app, sid)].count("done") == 1


def test_task_taken_by_a_worker_that_died_before_its_first_heartbeat_is_graded_again(lease_app, submit):
    queue = lease_app.extensions["amp_dojo_queue"]
    sid = new_submission(lease_app, submit)
    assert queue.huey.dequeue() is not None  # a worker took the task, then died before claiming it
    run_collector(lease_app)
    assert row(lease_app, sid)["status"] == "queued"  # within the lease: maybe just slow to start
    time.sleep(0.4)
    run_collector(lease_app)
    # first seen gone from the queue without a heartbeat: a worker that has just taken it gets a lease too
    assert row(lease_app, sid)["status"] == "queued"
    time.sleep(0.4)
    run_collector(lease_app)
    r = row(lease_app, sid)
    assert (r["status"], r["attempt"]) == ("queued", 2) and queue.is_pending(sid, 2)


def test_submission_waiting_in_a_long_queue_is_left_alone(lease_app, submit):
    queue = lease_app.extensions["amp_dojo_queue"]
    sid = new_submission(lease_app, submit)
    time.sleep(0.4)
    run_collector(lease_app)
    r = row(lease_app, sid)
    assert (r["status"], r["attempt"]) == ("queued", 1) and queue.pending_count() == 1


def test_result_of_an_abandoned_attempt_is_ignored(lease_app, submit):
    queue = lease_app.extensions["amp_dojo_queue"]
    sid = new_submission(lease_app, submit)
    stale = FakeWorker(queue, sid, 1, name="stale")
    stale.heartbeat()
    run_collector(lease_app)
    time.sleep(0.4)
    run_collector(lease_app)
    assert row(lease_app, sid)["attempt"] == 2
    stale.event("progress", stage="static")
    stale.finish(status="fail")
    run_collector(lease_app)
    assert row(lease_app, sid)["status"] == "queued"
    fresh = FakeWorker(queue, sid, 2, name="fresh")
    fresh.heartbeat()
    fresh.event("progress", stage="started")
    fresh.finish(status="pass")
    run_collector(lease_app)
    r = row(lease_app, sid)
    assert (r["status"], r["result_status"], r["graded_by"], r["attempt"]) == ("done", "pass", "fresh", 2)
    # attempt 1 keeps only the app's own 'queued' event: the stale worker's were never read
    assert [e for e in event_types(lease_app, sid) if e[1] == 1] == [("progress", 1)]


def test_two_app_processes_collecting_at_once_accept_the_result_once(app, submit):
    """Two queue clients and two database connections, as two app processes would have."""
    sid = new_submission(app, submit)
    worker = FakeWorker(app.extensions["amp_dojo_queue"], sid, 1)
    worker.heartbeat()
    for stage in ("started", "static", "baseline", "starting"):
        worker.event("progress", stage=stage)
    worker.event("check", check="parity", status="pass")
    worker.finish()
    queues = [GradingQueue(app.config["QUEUE_URL"]) for _ in range(2)]
    errors = []

    def run(queue):
        db = connect(app.config["DATABASE"])
        try:
            for _ in range(5):
                collect(db, queue, app.config)
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=run, args=(q,)) for q in queues]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    types = [t for t, _ in event_types(app, sid)]
    assert types == ["progress"] * 5 + ["check", "done"]
    assert row(app, sid)["status"] == "done"
    assert queues[0].peek("result", sid, 1) is None  # ingested keys are cleaned up


def test_submission_stored_while_the_queue_was_down_is_enqueued_later(app, submit, monkeypatch):
    queue = app.extensions["amp_dojo_queue"]

    def down(_payload):
        raise ConnectionError("queue down")

    monkeypatch.setattr(queue, "enqueue", down)
    sid = new_submission(app, submit)
    assert queue.pending_count() == 0 and row(app, sid)["enqueued_at"] is None
    monkeypatch.undo()
    run_collector(app)  # handing over is a compare-and-set: no grace period, and never twice
    run_collector(app)
    assert queue.pending_count() == 1 and row(app, sid)["enqueued_at"] is not None


def test_worker_skips_an_attempt_another_worker_claimed(app, submit):
    queue = app.extensions["amp_dojo_queue"]
    sid = new_submission(app, submit)
    assert queue.claim(sid, 1, "someone-else")
    assert queue.run_pending() == 1
    assert queue.peek("result", sid, 1) is None and queue.peek("hb", sid, 1) is None


def test_worker_event_log_sends_each_verdict_once_json_safe_and_leaves_done_to_the_app(app):
    from webapp.grading import EventLog

    queue = app.extensions["amp_dojo_queue"]
    log = EventLog(queue, "s1", 1)
    log.progress("static")
    log.progress("check", check="parity", status="pass")
    log.progress("check", check="parity", status="pass")
    log.progress("timing", rounds=1, speedup=float("nan"))
    log.progress("done", status="pass")
    assert [(e["type"], e["data"]) for e in queue.peek("events", "s1", 1)] == [
        ("progress", {"stage": "static"}),
        ("check", {"check": "parity", "status": "pass"}),
        ("progress", {"stage": "timing", "rounds": 1, "speedup": None}),
    ]

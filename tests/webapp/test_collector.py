"""The collector and the lease, with a scripted stand-in for the grading
worker: it writes the same keys into the queue's storage as webapp/grading.py."""

import json
import logging
import sys
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
        self.queue.put(
            "result",
            self.sid,
            self.attempt,
            {"status": "done", "result": result, "worker": self.name, "attempt": self.attempt},
        )


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
        return [
            (r["type"], r["attempt"])
            for r in db.execute("SELECT type, attempt FROM events WHERE submission_id = ? ORDER BY id", (sid,))
        ]
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
        except Exception as exc:  # noqa: BLE001 - surfaced below
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


# ---------- whatever a worker reports, the submission ends and stays small ----------


def forged_result(**extra):
    """A worker's result document as a learner's code could bend it (values the grader copied from the run)."""
    result = {
        "status": "fail",
        "score": 0.5,
        "output": "",
        "plots": {},
        "error": None,
        "checks": [
            {
                "id": "call_order",
                "status": "fail",
                "message": "clipped before unscale_",
                "findings": [{"id": "clip_without_unscale", "message": "clipped", "line": 3, "severity": "error"}],
            }
        ],
    }
    result.update(extra)
    return result


def _deep(depth):
    value = [0]
    for _ in range(depth):
        value = [value]
    return value


BIG = 10**30  # 31 digits: a trace event's line number rewritten by the learner's code
HUGE = "x" * (10 * 1024 * 1024)
FORGED = {
    "31_digit_line": forged_result(
        checks=[
            {
                "id": "call_order",
                "status": "fail",
                "message": "m",
                "findings": [{"id": "clip_without_unscale", "message": "clipped", "line": BIG, "severity": "error"}],
            }
        ]
    ),
    "31_digit_score_and_measure": forged_result(
        score=BIG,
        checks=[
            {"id": "parity", "status": "fail", "message": "m", "measured": {"steps": BIG, "n": -BIG}, "findings": []}
        ],
    ),
    "10_mb_message_twice": forged_result(status="error", error={"type": "ValueError", "message": HUGE}, output=HUGE),
    "nan": forged_result(
        score=float("nan"),
        checks=[
            {
                "id": "parity",
                "status": "fail",
                "message": "m",
                "measured": {"ratio": float("nan"), "max": float("inf")},
                "findings": [],
            }
        ],
    ),
    "deep_nesting": forged_result(
        checks=[{"id": "parity", "status": "fail", "message": "m", "measured": {"x": _deep(3000)}, "findings": []}]
    ),
}


def put_outcome(queue, sid, outcome):
    """Straight into the result key, as a worker would; deep values need a deeper stack to pickle."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    try:
        queue.put("result", sid, 1, outcome)
    finally:
        sys.setrecursionlimit(limit)


def strict_json(text):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("case", sorted(FORGED))
def test_a_forged_result_ends_its_submission_within_three_passes_stored_bounded(make_app, submit, case):
    app = make_app(MAX_RESULT_BYTES=65536)
    queue = app.extensions["amp_dojo_queue"]
    sid = new_submission(app, submit)
    FakeWorker(queue, sid, 1).heartbeat()
    put_outcome(queue, sid, {"status": "done", "result": FORGED[case], "worker": "fake:1", "attempt": 1})
    for _ in range(3):
        run_collector(app, sid)
    r = row(app, sid)
    assert r["status"] in ("done", "error"), r["error"]
    assert r["result"] is None or len(r["result"]) <= 65536
    assert r["score"] is None or 0.0 <= r["score"] <= 1.0
    response = app.test_client().get(f"/api/submissions/{sid}")  # not the learner's: 404, but it must not 500
    assert response.status_code == 404
    assert queue.peek("result", sid, 1) is None  # ingested or given up: the key is gone, no pass retries it
    db = connect(app.config["DATABASE"])
    try:
        lines = [x["line"] for x in db.execute("SELECT line FROM findings WHERE submission_id = ?", (sid,))]
    finally:
        db.close()
    assert all(line is None or 0 < line < 2**31 for line in lines)


def test_a_huge_result_is_kept_cut_with_its_verdict_and_served_as_strict_json(make_app, submit):
    app = make_app(MAX_RESULT_BYTES=65536)
    queue = app.extensions["amp_dojo_queue"]
    client = app.test_client()
    sid = submit(client, CODE).get_json()["id"]
    FakeWorker(queue, sid, 1).heartbeat()
    result = forged_result(
        status="error",
        error={"type": "ValueError", "message": HUGE},
        output=HUGE,
        score=float("nan"),
        plots={"loss": {"submission": [0.5] * 200000, "baseline": [1.0] * 8}},
    )
    put_outcome(queue, sid, {"status": "done", "result": result, "worker": "fake:1", "attempt": 1})
    run_collector(app, sid)
    response = client.get(f"/api/submissions/{sid}")
    assert len(response.get_data()) < 65536 + len(CODE) + 8192
    body = strict_json(response.get_data(as_text=True))
    kept = body["result"]
    assert (body["status"], kept["status"], kept["score"]) == ("done", "error", None)
    assert [(c["id"], c["status"], c["message"]) for c in kept["checks"]] == [
        ("call_order", "fail", "clipped before unscale_")
    ]
    assert f"[truncated: {len(HUGE)} bytes]" in kept["output"] and kept["output"].startswith("xxxx")
    assert f"[truncated: {len(HUGE)} bytes]" in kept["error"]["message"]
    assert kept["truncated"]["limit"] == 65536 and kept["truncated"]["plots"] in ("thinned", "dropped")
    assert len((kept["plots"].get("loss") or {}).get("submission", [])) <= 2000


def test_a_result_the_database_refuses_ends_as_an_error_after_three_passes_logged_once(
    app, submit, monkeypatch, caplog
):
    from webapp import learner_lessons

    lease_app = app
    queue = lease_app.extensions["amp_dojo_queue"]
    sid = new_submission(lease_app, submit)
    worker = FakeWorker(queue, sid, 1)
    worker.heartbeat()
    worker.finish()

    def refuse(*_args):
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    monkeypatch.setattr(learner_lessons, "graded", refuse)
    with caplog.at_level(logging.INFO, logger="amp_dojo.collector"):
        for n in range(2):
            run_collector(lease_app, sid)
            assert row(lease_app, sid)["status"] == "queued", n  # rolled back, tried again on the next pass
        run_collector(lease_app, sid)
        run_collector(lease_app, sid)
    r = row(lease_app, sid)
    assert r["status"] == "error" and r["error"] == (
        "the grading result could not be stored: OverflowError: Python int too large to convert to SQLite INTEGER"
    )
    assert [t for t, _ in event_types(lease_app, sid)].count("done") == 1
    assert queue.peek("result", sid, 1) is None
    noisy = [rec for rec in caplog.records if rec.levelno >= logging.WARNING]
    assert len(noisy) == 1 and sid in noisy[0].getMessage() and noisy[0].exc_info is None


def test_storing_a_huge_forged_result_does_not_block_another_writer(tmp_path, submit):
    from webapp_testing import base_config

    from webapp import create_app
    from webapp.db import transaction

    app = create_app(base_config(tmp_path))  # SQLite: one write lock for everybody
    queue = app.extensions["amp_dojo_queue"]
    sid = new_submission(app, submit)
    FakeWorker(queue, sid, 1).heartbeat()
    big = forged_result(
        output=HUGE,
        error={"message": HUGE},
        checks=[
            {
                "id": "call_order",
                "status": "fail",
                "message": HUGE,
                "findings": [{"id": "clip_without_unscale", "message": "x", "line": BIG, "severity": "error"}],
            }
        ],
    )
    put_outcome(queue, sid, {"status": "done", "result": big, "worker": "fake:1", "attempt": 1})
    stop, waits = threading.Event(), []

    def other_writer():
        db = connect(app.config["DATABASE"])
        try:
            while not stop.is_set():
                started = time.monotonic()
                with transaction(db):
                    db.execute(
                        "INSERT INTO site_settings (key, value) VALUES ('probe', '1') "
                        "ON CONFLICT (key) DO UPDATE SET value = 'x'"
                    )
                waits.append(time.monotonic() - started)
                time.sleep(0.01)
        finally:
            db.close()

    writer = threading.Thread(target=other_writer)
    writer.start()
    try:
        for _ in range(3):
            run_collector(app, sid)
    finally:
        stop.set()
        writer.join()
    assert row(app, sid)["status"] in ("done", "error")
    assert waits and max(waits) < 1.0, max(waits)


def test_worker_events_are_bounded_in_size_number_and_type(make_app, submit):
    app = make_app(MAX_EVENT_BYTES=2048, MAX_EVENTS_PER_ATTEMPT=10)
    queue = app.extensions["amp_dojo_queue"]
    sid = new_submission(app, submit)
    worker = FakeWorker(queue, sid, 1)
    worker.heartbeat()
    forged = [
        {"type": "done\nevent: x", "data": {"stage": "static", "note": "y" * 100000, "line": BIG}},
        {"type": "check", "data": {"check": "parity", "status": "pass", "ratio": float("nan")}},
        {"type": "progress", "data": "not an object"},
        "not an event",
    ]
    queue.put("events", sid, 1, forged + [{"type": "progress", "data": {"stage": "timing", "n": n}} for n in range(50)])
    for _ in range(3):
        run_collector(app, sid)
    db = connect(app.config["DATABASE"])
    try:
        stored = db.execute(
            "SELECT type, data FROM events WHERE submission_id = ? AND source LIKE 'w:%' ORDER BY id", (sid,)
        ).fetchall()
    finally:
        db.close()
    assert len(stored) == 10
    assert {e["type"] for e in stored} == {"progress", "check"}
    assert all(len(e["data"]) <= 2048 for e in stored)
    first = strict_json(stored[0]["data"])
    assert first["stage"] == "static" and "[truncated:" in first["note"]
    assert strict_json(stored[1]["data"]) == {"check": "parity", "status": "pass", "ratio": None}


def test_a_real_result_document_is_stored_as_the_grader_wrote_it():
    """The example of docs/results.md passes through the bounds unchanged: no marker, nothing cut."""
    import re
    from pathlib import Path

    from webapp import bounds

    text = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text()
    document = json.loads(re.search(r"## Example.*?```json\n(.*?)\n```", text, re.S).group(1))
    assert bounds.result(document, 262144) == document


def test_a_result_stored_unbounded_before_is_served_cut(app, submit):
    client = app.test_client()
    sid = submit(client, CODE).get_json()["id"]
    db = connect(app.config["DATABASE"])
    try:  # as a version without bounds stored it
        db.execute(
            "UPDATE submissions SET status = 'done', result = ?, result_status = 'error' WHERE id = ?",
            (json.dumps(forged_result(status="error", output="y" * 3_000_000)), sid),
        )
    finally:
        db.close()
    response = client.get(f"/api/submissions/{sid}")
    assert response.status_code == 200 and len(response.get_data()) < 1_100_000
    assert "[truncated: 3000000 bytes]" in response.get_json()["result"]["output"]

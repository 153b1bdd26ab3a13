"""Cancelling a grading: a queued submission never reaches a sandbox, a
running one stops within a second and frees its worker, and either way the
submission ends once, without a verdict, and says it was cancelled."""

import threading
import time

from webapp_testing import csrf_headers

ENDLESS = """
def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    while True:
        pass
"""


def cancel(client, sid, headers=None):
    return client.post(f"/api/submissions/{sid}/cancel", headers=csrf_headers(client) if headers is None else headers)


def test_a_queued_submission_is_cancelled_and_never_graded(app, client, submit, grade_queued):
    sid = submit(client, ENDLESS).get_json()["id"]
    response = cancel(client, sid)
    assert response.status_code == 200 and response.get_json()["cancelled"] is True
    assert grade_queued(app) == 0  # its task left the queue: no worker ever sees it
    d = client.get(f"/api/submissions/{sid}").get_json()
    assert d["status"] == "error" and d["cancelled"] and d["result"] is None
    done = [e for e in d["events"] if e["type"] == "done"]
    assert len(done) == 1 and done[0]["data"]["cancelled"] is True
    queue = app.extensions["amp_dojo_queue"]
    assert queue.peek("cancel", sid, 1) is None and queue.peek("task", sid, 1) is None  # nothing left behind
    history = client.get("/api/lessons/autocast/submissions").get_json()["submissions"]
    assert history[0]["cancelled"] is True


def test_a_finished_submission_cannot_be_cancelled(app, client, submit, grade_queued):
    sid = submit(client, "def train_step(:\n").get_json()["id"]
    grade_queued(app)
    client.get(f"/api/submissions/{sid}")  # collects the result
    response = cancel(client, sid)
    assert response.status_code == 409 and "finished" in response.get_json()["error"]


def test_only_its_learner_can_cancel_a_submission(app, client, submit):
    sid = submit(client, ENDLESS).get_json()["id"]
    other = app.test_client()
    assert cancel(other, sid).status_code == 404
    assert cancel(client, sid, headers={}).status_code == 403  # no CSRF token
    assert client.get(f"/api/submissions/{sid}").get_json()["status"] == "queued"


def test_cancelling_a_running_grading_stops_it_and_frees_the_worker(app, client, submit):
    """An endless loop would hold the worker for the whole step limit (60 s); Cancel frees it at once."""
    sid = submit(client, ENDLESS).get_json()["id"]
    worker = threading.Thread(target=app.extensions["amp_dojo_queue"].run_pending, daemon=True)
    worker.start()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # until the learner's first step is running
        d = client.get(f"/api/submissions/{sid}").get_json()
        steps = [e for e in d["events"] if e["type"] == "progress" and e["data"].get("stage") == "step"]
        if steps:
            break
        time.sleep(0.2)
    # the step's limit (60 s), or what is left of the whole grading's budget where that is less
    assert steps and 0 < steps[0]["data"]["limit_s"] <= 60 and steps[0]["data"]["total"] == 8
    time.sleep(1.0)
    assert worker.is_alive()  # still in the endless loop
    started = time.monotonic()
    assert cancel(client, sid).status_code == 200
    worker.join(timeout=15)
    assert not worker.is_alive(), "the worker did not stop grading the cancelled submission"
    assert time.monotonic() - started < 5
    d = client.get(f"/api/submissions/{sid}").get_json()
    assert d["status"] == "error" and d["cancelled"] and d["result"] is None
    queue = app.extensions["amp_dojo_queue"]
    assert all(queue.peek(kind, sid, 1) is None for kind in ("result", "cancel", "events", "hb"))

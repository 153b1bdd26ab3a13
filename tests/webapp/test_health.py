"""Health, readiness and the worker registry: /healthz answers while the process lives, /readyz only while the
database, the queue and at least one live grading worker are there (503 naming what is missing); a learner
whose submission waits while no worker is alive is told so in their language, and it is graded once one
starts; instructors see the workers and the queue.

The workers' heartbeats live in the queue's storage (webapp/workers.py): every test here runs on a SQLite queue
and on a Redis one (and, as everywhere, on a SQLite and a PostgreSQL database)."""

import json
import time

import pytest
from webapp_testing import base_config, grade_as, make_instructor, signin, signup

from grader.lesson.loader import load_all
from webapp import create_app, workers
from webapp.db import connect

STARTER = load_all()["autocast"].starter
ME = workers.Identity("gpu-box", 4242, "cuda:0", "docker", 2)
NO_GRADER = {
    "en": "No grader is running on this server right now",
    "it": "Al momento su questo server non è in funzione nessun valutatore",
    "id": "Saat ini tidak ada penilai yang berjalan di server ini",
}


@pytest.fixture(params=["sqlite-queue", "redis-queue"])
def make_app(request, tmp_path, database):
    """conftest's make_app, on either kind of queue."""
    queue = {"QUEUE_URL": request.getfixturevalue("redis_url")} if request.param == "redis-queue" else {}

    def _make(**overrides):
        return create_app(base_config(tmp_path, **{"DATABASE": database, **queue, **overrides}))

    return _make


def queue_of(app):
    return app.extensions["amp_dojo_queue"]


def heartbeat(app, worker_id: str = "w1", age_s: float = 0.0, grading=()) -> None:
    """A worker's record in the queue's storage, as its WorkerBeat writes it, last seen `age_s` ago."""
    workers.beat(queue_of(app), worker_id, ME, grading, time.time() - age_s)


def test_healthz_answers_without_a_session_or_an_account(make_app):
    client = make_app(ANONYMOUS_USE=False).test_client()
    assert client.get("/").status_code in (302, 303, 401)  # anonymous use is off: pages ask to sign in
    response = client.get("/healthz")
    assert response.status_code == 200 and response.get_json() == {"status": "ok"}
    assert "Set-Cookie" not in response.headers
    assert client.get("/readyz").status_code == 503  # answered too, not sent to the sign-in page


def test_readyz_is_503_naming_the_worker_while_no_worker_is_alive(client):
    response = client.get("/readyz")
    assert response.status_code == 503
    report = response.get_json()
    assert report["missing"] == ["worker"] and report["database"] and report["queue"]
    assert report["workers_alive"] == 0 and "Set-Cookie" not in response.headers


def test_readyz_is_200_with_a_live_worker_heartbeat(app, client):
    heartbeat(app)
    response = client.get("/readyz")
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {"ready": True, "missing": [], "database": True, "queue": True, "workers_alive": 1}


def test_a_worker_silent_past_the_staleness_counts_as_dead(make_app):
    app = make_app(WORKER_DEAD_AFTER_SECONDS=15)
    heartbeat(app, "old", age_s=16)
    report = app.test_client().get("/readyz").get_json()
    assert report["missing"] == ["worker"] and report["workers_alive"] == 0
    heartbeat(app, "new", age_s=14)
    assert app.test_client().get("/readyz").status_code == 200


def test_heartbeats_are_judged_by_the_queues_clock_not_the_worker_machines(tmp_path, redis_url, monkeypatch):
    """Redis's TIME stamps and judges every beat: a worker machine whose clock runs an hour behind is alive
    (judged by its own clock it would be long dead), and one whose clock runs ahead is not kept alive."""
    app = create_app(base_config(tmp_path, QUEUE_URL=redis_url, WORKER_DEAD_AFTER_SECONDS=15))
    real = time.time
    for worker_id, skew_s in (("behind", -3600.0), ("ahead", 3600.0)):
        monkeypatch.setattr(time, "time", lambda skew_s=skew_s: real() + skew_s)
        workers.beat(queue_of(app), worker_id, ME, [])
        monkeypatch.undo()
    assert workers.alive(queue_of(app), app.config) == 2
    listed = {w["id"]: w for w in workers.listing(queue_of(app), app.config)}
    assert all(abs(listed[w]["last_seen"] - real()) < 5 for w in ("behind", "ahead"))


def test_readyz_names_a_queue_that_cannot_be_reached(app, client):
    class Down:
        def pending_count(self):
            raise ConnectionError("redis is down")

    heartbeat(app)
    app.extensions["amp_dojo_queue"] = Down()
    response = client.get("/readyz")
    assert response.status_code == 503 and response.get_json()["missing"] == ["queue"]


def test_a_worker_beat_keeps_its_record_while_it_runs_and_removes_it_on_a_clean_exit(app):
    current = workers.Current()
    beat = workers.WorkerBeat(queue_of(app), ME, 0.05, current.ids)
    with beat, current.holding("sub1"):
        time.sleep(0.2)
        (row,) = workers.listing(queue_of(app), app.config)
        assert row["alive"] and row["grading"] == ["sub1"] and (row["host"], row["pid"]) == ("gpu-box", 4242)
        assert row["started_at"] < row["last_seen"]  # the first beat's time, kept by the later ones
        assert app.test_client().get("/readyz").status_code == 200
    assert workers.listing(queue_of(app), app.config) == []
    assert app.test_client().get("/readyz").status_code == 503


def test_a_waiting_learner_is_told_no_grader_runs_in_their_language_and_is_graded_once_one_starts(
    app, client, submit, monkeypatch
):
    response = client.post("/api/lessons/autocast/submissions?lang=id", json={"code": STARTER}, headers=_csrf(client))
    body = response.get_json()
    assert response.status_code == 202 and body["no_grader_running"] is True
    assert body["no_grader_notice"].startswith(NO_GRADER["id"])
    sid = body["id"]
    for lang in ("it", "id", "en"):
        doc = client.get(f"/api/submissions/{sid}?lang={lang}").get_json()
        assert doc["no_grader_running"] is True and doc["no_grader_notice"].startswith(NO_GRADER[lang])
        client.set_cookie("lang", lang)
        page = client.get(f"/submissions/{sid}").get_data(as_text=True)
        assert NO_GRADER[lang] in page  # the status line, before the script takes over
    # A worker starts: it beats, then takes the task that waited (nothing was lost) and grades it.
    queue = app.extensions["amp_dojo_queue"]
    seen = []

    def grader(settings, payload, progress, cancel=None, launchers=None):
        seen.append(queue.current.ids())
        result = {"status": "pass", "score": 1.0, "checks": [], "output": "", "plots": {}, "error": None}
        return {"status": "done", "result": result}

    monkeypatch.setattr("webapp.grading.run_grader", grader)
    with workers.WorkerBeat(queue, ME, 5.0, queue.current.ids):
        doc = client.get(f"/api/submissions/{sid}?lang=it").get_json()
        assert doc["status"] == "queued" and doc["no_grader_running"] is False and doc["no_grader_notice"] is None
        assert queue.run_pending() == 1
    assert seen == [[sid]]  # the worker's heartbeat named what it was grading
    doc = client.get(f"/api/submissions/{sid}").get_json()
    assert (doc["status"], doc["result_status"], doc["no_grader_running"]) == ("done", "pass", False)


def test_the_live_stream_says_when_no_grader_is_running(make_app, submit):
    app = make_app(STREAM_SECONDS=20, STREAM_IDLE_SECONDS=1, COLLECT_INTERVAL=0)
    client = app.test_client()
    sid = submit(client, STARTER).get_json()["id"]
    response = client.get(f"/api/submissions/{sid}/stream", buffered=False)
    body = b"".join(response.response).decode()  # ends after STREAM_IDLE_SECONDS without news
    response.close()
    sent = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    assert [data for data in sent if "position" in data] == [{"position": 1, "no_grader_running": True}]


def test_the_workers_page_lists_live_and_dead_workers_and_the_queue_for_instructors_only(app, submit):
    heartbeat(app, "alive-one", grading=["abc123"])
    heartbeat(app, "dead-one", age_s=600)
    learner = app.test_client()
    signup(learner, "ada")
    submit(learner, STARTER)
    assert learner.get("/teach/workers").status_code == 403
    assert "nav-workers" not in learner.get("/").get_data(as_text=True)
    assert app.test_client().get("/teach/workers").status_code in (302, 303, 401)
    make_instructor(app, "teacher")
    teacher = app.test_client()
    signin(teacher, "teacher")
    assert 'data-testid="nav-workers"' in teacher.get("/").get_data(as_text=True)
    page = teacher.get("/teach/workers").get_data(as_text=True)
    assert page.count('data-worker-alive="yes"') == 1 and page.count('data-worker-alive="no"') == 1
    assert "abc123" in page and "gpu-box:4242" in page and "cuda:0" in page
    assert "Waiting for a grader: 1" in page


def test_a_graded_submission_leaves_the_waiting_count(app, client, submit):
    sid = submit(client, STARTER).get_json()["id"]
    with connect(app.config["DATABASE"]) as db:
        assert workers.waiting(db)[0] == 1
    grade_as(app, sid, "pass")
    with connect(app.config["DATABASE"]) as db:
        assert workers.waiting(db) == (0, None)


def _csrf(client):
    from webapp_testing import csrf_headers

    return csrf_headers(client)

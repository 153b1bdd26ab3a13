"""Real `amp-dojo worker` processes: several workers on one Redis queue, and a
worker killed in the middle of a grading. Slow: each grading starts PyTorch
processes."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from webapp_testing import base_config, csrf_headers

from grader.lesson.loader import load_exercise
from webapp import create_app

ROOT = Path(__file__).resolve().parents[2]
AUTOCAST = load_exercise("autocast")
# Half a second per training step: a grading that is surely still running when it is killed.
SLOW_REFERENCE = AUTOCAST.reference.replace("import torch\n", "import time\nimport torch\n", 1).replace(
    "    return loss", "    time.sleep(0.5)\n    return loss"
)

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_worker(queue_url: str, log_path: Path, **extra_env) -> subprocess.Popen:
    """`amp-dojo worker` in its own process group, as an operator would start it: the queue's URL is all it is
    given (its heartbeat goes there too: webapp/workers.py)."""
    env = dict(
        os.environ,
        AMP_DOJO_QUEUE_URL=queue_url,
        AMP_DOJO_WORKER_HEARTBEAT_SECONDS="0.5",
        AMP_DOJO_SANDBOX="local",
        AMP_DOJO_ALLOW_LOCAL_SANDBOX="true",
        AMP_DOJO_DEVICE="cpu",
        PYTHONPATH=str(ROOT),
        AMP_DOJO_WARM_AT_START="false",
        AMP_DOJO_LOG_LEVEL="INFO",  # what the tests read of its work (a start without it prints its banner alone)
        **extra_env,
    )
    env.pop("AMP_DOJO_CONFIG", None)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "webapp.cli", "worker"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(proc: subprocess.Popen, sig=signal.SIGINT) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_for(predicate, timeout: float, what: str, logs=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    tails = "\n".join(f"--- {p}\n{Path(p).read_text()[-3000:]}" for p in logs if Path(p).exists())
    pytest.fail(f"timed out after {timeout}s waiting for {what}\n{tails}")


def submit(client, code: str) -> str:
    response = client.post("/api/lessons/autocast/submissions", json={"code": code}, headers=csrf_headers(client))
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def status_of(client, sid: str) -> dict:
    return client.get(f"/api/submissions/{sid}").get_json()  # collects what the workers wrote


def test_two_workers_on_redis_grade_every_submission_exactly_once(tmp_path, redis_url):
    app = create_app(base_config(tmp_path, QUEUE_URL=redis_url))
    client = app.test_client()
    logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
    workers = [start_worker(redis_url, log) for log in logs]
    try:
        codes = [AUTOCAST.reference, AUTOCAST.starter, AUTOCAST.reference, AUTOCAST.starter]
        sids = [submit(client, code) for code in codes]
        finished = lambda: all(status_of(client, s)["status"] in ("done", "error") for s in sids)  # noqa: E731
        wait_for(finished, 240, "four gradings", logs)
    finally:
        for w in workers:
            stop(w)
    names = {f"{socket.gethostname()}:{w.pid}" for w in workers}
    for sid, code in zip(sids, codes):
        d = status_of(client, sid)
        assert (d["status"], d["attempt"]) == ("done", 1), d
        assert d["result"]["status"] == ("pass" if code == AUTOCAST.reference else "fail")
        kinds = [(e["type"], e["data"].get("stage")) for e in d["events"]]
        assert kinds.count(("done", None)) == 1 and kinds.count(("progress", "started")) == 1
    graded_by = _graded_by(app, sids)
    assert set(graded_by.values()) <= names and len(graded_by) == len(sids)
    import redis

    claims = [
        k.decode()
        for k in redis.Redis.from_url(redis_url).hkeys("huey.results.ampdojo")
        if k.startswith(b"amp-dojo:claim:")
    ]
    assert sorted(claims) == sorted(f"amp-dojo:claim:{sid}:1" for sid in sids)  # one attempt each, no duplicate


def _graded_by(app, sids) -> dict:
    from webapp.db import connect

    db = connect(app.config["DATABASE"])
    try:
        rows = db.execute(
            f"SELECT id, graded_by FROM submissions WHERE id IN ({','.join('?' * len(sids))})", sids
        ).fetchall()
        return {r["id"]: r["graded_by"] for r in rows}
    finally:
        db.close()


def _registry(app) -> dict:
    """pid -> (alive, what it grades now), from the worker heartbeats in the queue's storage."""
    from webapp import workers

    return {w["pid"]: (w["alive"], w["grading"]) for w in workers.listing(app.extensions["amp_dojo_queue"], app.config)}


def test_a_worker_given_only_the_redis_url_is_seen_alive_by_the_web_app_and_gone_after_a_clean_exit(
    tmp_path, redis_url
):
    """A worker on another machine reaches the queue, not the web app's database (here: a file of its own machine
    it must never open): /readyz and the workers page still know it runs, from its heartbeat in Redis."""
    app = create_app(base_config(tmp_path, QUEUE_URL=redis_url))
    client = app.test_client()
    elsewhere = tmp_path / "gpu-machine" / "amp_dojo.sqlite3"
    log = tmp_path / "worker.log"
    worker = start_worker(redis_url, log, AMP_DOJO_DATABASE=str(elsewhere))
    try:
        wait_for(lambda: client.get("/readyz").status_code == 200, 120, "/readyz to see the worker", [log])
        assert _registry(app) == {worker.pid: (True, [])}
    finally:
        stop(worker)
    assert worker.returncode == 0 and _registry(app) == {}
    assert client.get("/readyz").get_json()["missing"] == ["worker"]
    assert not elsewhere.exists()  # the worker never opened a database


def test_submission_of_a_killed_worker_is_graded_by_the_next_one(tmp_path):
    queue_url = f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    app = create_app(base_config(tmp_path, QUEUE_URL=queue_url, LEASE_SECONDS=3))
    client = app.test_client()
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    first = start_worker(queue_url, logs[0])
    second = None
    try:
        sid = submit(client, SLOW_REFERENCE)
        wait_for(lambda: status_of(client, sid)["status"] == "running", 120, "the first worker to start", logs)
        wait_for(lambda: _registry(app) == {first.pid: (True, [sid])}, 10, "its heartbeat naming the grading", logs)
        assert client.get("/readyz").status_code == 200
        stop(first, signal.SIGKILL)
        second = start_worker(queue_url, logs[1])
        wait_for(lambda: status_of(client, sid)["status"] in ("done", "error"), 180, "the regrade", logs)
    finally:
        for w in (first, second):
            if w is not None:
                stop(w, signal.SIGKILL if w is first else signal.SIGINT)
    d = status_of(client, sid)
    assert (d["status"], d["attempt"]) == ("done", 2), d
    assert d["result"]["status"] == "pass"
    assert _graded_by(app, [sid])[sid] == f"{socket.gethostname()}:{second.pid}"
    assert second.pid not in _registry(app) and first.pid in _registry(app)  # a clean exit removes its row
    assert any(e["data"].get("stage") == "retry" for e in d["events"])


def test_after_a_restart_no_trusted_run_is_computed_again(tmp_path):
    """The FP32 baseline and the reference live in the queue's storage (here its SQLite file): a restarted
    worker grades from them at once, and it grades from warm sandboxes."""
    queue_url = f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    app = create_app(base_config(tmp_path, QUEUE_URL=queue_url))
    client = app.test_client()
    logs = [tmp_path / "before.log", tmp_path / "after.log"]
    for log, code in zip(logs, (AUTOCAST.reference, AUTOCAST.starter)):
        worker = start_worker(queue_url, log, AMP_DOJO_POOL_SIZE="1")
        try:
            sid = submit(client, code)
            wait_for(lambda sid=sid: status_of(client, sid)["status"] in ("done", "error"), 180, "a grading", logs)
        finally:
            stop(worker)
        assert status_of(client, sid)["status"] == "done", status_of(client, sid)
    before, after = (p.read_text() for p in logs)
    assert "running the baseline of autocast" in before and "running the reference of autocast" in before
    assert "running the" not in after, after[-3000:]
    assert "1 warm sandboxes" in after

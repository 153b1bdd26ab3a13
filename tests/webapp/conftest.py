"""Fixtures for the web app (Flask tutorial style): `app`, `client`, `runner`,
plus `make_app` for tests that need other settings. Every app has its own
database and SQLite queue under tmp_path, grades on CPU, and may use the local
(unisolated) sandbox because the test suite is its own learner.

Every test that builds its app through these fixtures runs twice: on SQLite (a
file under tmp_path) and on PostgreSQL (a fresh database on the test server of
tests/conftest.py)."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tutor_model import model_server, silent_server  # noqa: F401 - the tutor's model servers (tests/tutor_model.py)
from webapp_testing import base_config, csrf_headers

from webapp import create_app


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """The DATABASE setting: a SQLite file, or the URL of a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "app.sqlite3")
    return request.getfixturevalue("postgres_database")


@pytest.fixture
def make_app(tmp_path, database):
    def _make(**overrides):
        return create_app(base_config(tmp_path, **{"DATABASE": database, **overrides}))

    return _make


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def csrf():
    return csrf_headers


@pytest.fixture
def submit():
    """submit(client, code, lesson="autocast") -> the POST's response."""

    def _submit(client, code: str, lesson: str = "autocast"):
        return client.post(f"/api/lessons/{lesson}/submissions", json={"code": code}, headers=csrf_headers(client))

    return _submit


@pytest.fixture
def grade_queued():
    """Runs an app's queued grading tasks in this process, as `amp-dojo worker` would."""

    def _grade(app) -> int:
        return app.extensions["amp_dojo_queue"].run_pending()

    return _grade


@pytest.fixture
def redis_url(tmp_path):
    """A redis-server of its own, for this test: its QUEUE_URL."""
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(server).exists():
        if os.environ.get("AMP_DOJO_REQUIRE_REDIS"):  # CI: a missing server is a failure, not a skip
            pytest.fail("AMP_DOJO_REQUIRE_REDIS is set but redis-server is not installed")
        pytest.skip("redis-server is not installed (set AMP_DOJO_REQUIRE_REDIS=1 to make this a failure)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)]
    proc = subprocess.Popen([server, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 10
    while not _pings(client):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("redis-server did not start")
        time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)


def _pings(client) -> bool:
    try:
        return client.ping()
    except Exception:  # noqa: BLE001 - whatever stops a ping means no server yet
        return False

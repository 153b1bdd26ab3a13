"""Quiet, useful logs (webapp/logs.py): a normal `amp-dojo run` says the URL and nothing else before it serves;
migrations speak at LOG_LEVEL=INFO; LOG_FORMAT=json writes one JSON object per line, a request's carrying the
request id the response echoes in X-Request-Id. The servers are started by the test, on loopback and free ports,
and stopped by it."""

import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_server import free_port, get
from webapp_testing import base_config, csrf_headers

from webapp import create_app, logs

ROOT = Path(__file__).resolve().parents[2]


def instance_env(tmp_path, **settings) -> dict:
    env = {
        **os.environ,
        "AMP_DOJO_DATABASE": str(tmp_path / "app.sqlite3"),
        "AMP_DOJO_QUEUE_URL": f"sqlite:///{tmp_path / 'queue.sqlite3'}",
        "AMP_DOJO_SECRET_KEY": "test",
        "AMP_DOJO_SANDBOX": "local",
        "AMP_DOJO_ALLOW_LOCAL_SANDBOX": "true",
        "AMP_DOJO_DEVICE": "cpu",
        "AMP_DOJO_WARM_AT_START": "false",  # the lessons' trusted runs are minutes of CPU; not what is tested
        "AMP_DOJO_POOL_SIZE": "0",
        "AMP_DOJO_GRADING_CONCURRENCY": "1",
        **{f"AMP_DOJO_{name}": value for name, value in settings.items()},
    }
    for name in ("AMP_DOJO_CONFIG", "AMP_DOJO_LOG_LEVEL", "AMP_DOJO_LOG_FORMAT"):
        if name.removeprefix("AMP_DOJO_") not in settings:
            env.pop(name, None)
    return env


class Started:
    """`amp-dojo ARGS` in a process group of its own, its output (stdout and stderr) read line by line."""

    def __init__(self, tmp_path, *args: str, **settings):
        self.port = free_port()
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "webapp.cli", *args, "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=ROOT,
            env=instance_env(tmp_path, **settings),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_serving(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if get(self.port, "/api/session", timeout=1)[0] == 200:
                    return
            except OSError:
                pass
            assert self.proc.poll() is None and time.monotonic() < deadline, "\n".join(self.lines)
            time.sleep(0.2)

    def stop(self, sig=signal.SIGKILL) -> list[str]:
        """Ends it (and the worker it started) and returns everything it printed."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(10)
        return self.lines


def test_a_normal_start_of_amp_dojo_run_prints_at_most_3_lines_before_serving(tmp_path):
    started = Started(tmp_path, "run")
    try:
        started.wait_serving()
        time.sleep(2)  # the worker's own start, beside the server
        lines = list(started.lines)
    finally:
        started.stop()
    assert len(lines) <= 3, "\n".join(lines)
    assert f"AMP Dojo is at http://127.0.0.1:{started.port}/  (Ctrl+C stops it)" in lines


def test_migrations_speak_at_log_level_info_only(tmp_path):
    def init_db(folder, **settings):
        done = subprocess.run(
            [sys.executable, "-m", "webapp.cli", "init-db"],
            cwd=ROOT,
            env=instance_env(folder, **settings),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    quiet = init_db(tmp_path / "a")
    assert quiet.strip().splitlines() == [f"database ready at sqlite:///{tmp_path / 'a' / 'app.sqlite3'}"]
    assert "Running upgrade  -> 0001" in init_db(tmp_path / "b", LOG_LEVEL="INFO")


def test_json_logs_are_one_object_per_line_and_carry_the_request_id(tmp_path):
    started = Started(tmp_path, "serve", LOG_FORMAT="json", LOG_LEVEL="INFO")
    try:
        started.wait_serving()
        status, response, _ = get(started.port, "/api/session", timeout=30)
        request_id = response.getheader("X-Request-Id")
        time.sleep(0.5)
    finally:
        lines = started.stop(signal.SIGTERM)
    assert status == 200 and request_id
    documents = [json.loads(line) for line in lines]  # every line, the URL's included
    assert all(isinstance(d, dict) and d["message"] for d in documents)
    (line,) = [d for d in documents if d.get("request_id") == request_id]
    assert line["message"] == "GET /api/session 200" and line["duration_ms"] >= 0 and line["learner"]


@pytest.mark.parametrize("sent", [None, "a bad id; <script>", "x" * 65])
def test_every_response_carries_a_request_id_of_its_own(tmp_path, sent):
    client = create_app(base_config(tmp_path)).test_client()
    headers = {"X-Request-Id": sent} if sent else {}
    first = client.get("/api/session", headers=headers).headers["X-Request-Id"]
    second = client.get("/api/session", headers=headers).headers["X-Request-Id"]
    assert first != second and len(first) == 16 and first.isalnum()


def test_a_proxys_well_formed_request_id_is_kept(tmp_path):
    client = create_app(base_config(tmp_path)).test_client()
    assert client.get("/nowhere", headers={"X-Request-Id": "nginx-7f3a.9"}).headers["X-Request-Id"] == "nginx-7f3a.9"


@contextmanager
def json_lines(name: str):
    """The JSON lines logger `name` writes at INFO, as LOG_FORMAT=json would (the handler's filter and format)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger(name)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    lines: list[dict] = []
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        lines.extend(json.loads(line) for line in stream.getvalue().splitlines())


def test_a_submissions_request_line_names_the_submission_the_lesson_and_the_learner(tmp_path):
    client = create_app(base_config(tmp_path)).test_client()
    headers = csrf_headers(client)
    with json_lines("amp_dojo.requests") as lines:
        response = client.post("/api/lessons/autocast/submissions", json={"code": "x = 1\n"}, headers=headers)
    assert response.status_code == 202
    (line,) = [d for d in lines if d["message"].startswith("POST ")]
    assert line["submission_id"] == response.get_json()["id"] and line["lesson"] == "autocast"
    assert line["request_id"] == response.headers["X-Request-Id"] and line["learner"]


def test_a_workers_lines_name_the_submission_its_lesson_and_attempt(tmp_path):
    from webapp import grading

    queue = create_app(base_config(tmp_path)).extensions["amp_dojo_queue"]
    assert queue.claim("s1", 2, "another worker")
    with json_lines("amp_dojo.worker") as lines:  # a duplicate task: the worker only says it skips it
        grading.grade(queue, {"submission_id": "s1", "attempt": 2, "exercise_id": "autocast", "code": ""})
    (line,) = lines
    assert (line["level"], line["submission_id"], line["lesson"], line["attempt"]) == ("WARNING", "s1", "autocast", 2)
    assert "request_id" not in line

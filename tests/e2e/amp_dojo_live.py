"""Runs the real AMP Dojo app as subprocesses on a loopback port: `amp-dojo serve`
and one `amp-dojo worker`, sharing a temporary database and SQLite queue.

Used by the browser test (tests/e2e/conftest.py) and by bench/webapp_load.py
(which imports it as `e2e.amp_dojo_live` with tests/ on sys.path).

    with LiveApp(tmp_dir, settings={"QUEUE_MAX": 5}) as app:
        requests.get(app.url + "/api/lessons")

Settings go in as AMP_DOJO_<KEY> variables (JSON-encoded), the way a deployment sets
them (docs/configuration.md); the caller's own AMP_DOJO_* variables are dropped so
that a developer's environment cannot change what is tested."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The browser for tests/e2e: the system's Chromium, never a Playwright download.
CHROMIUM = os.environ.get("AMP_DOJO_CHROMIUM", "/usr/bin/chromium")
REQUIRE_BROWSER = bool(os.environ.get("AMP_DOJO_REQUIRE_BROWSER"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def choose_sandbox() -> tuple[str, str | None]:
    """("bwrap", None) where bubblewrap can run here, else ("local", why not bwrap)."""
    from grader.sandboxes.kinds import unavailable_reason

    why = unavailable_reason("bwrap")
    return ("bwrap", None) if why is None else ("local", why)


class AppDidNotStart(RuntimeError):
    pass


class LiveApp:
    """The web server and `workers` grading workers, each in its own process group."""

    def __init__(
        self,
        workdir: Path | str,
        *,
        settings: dict | None = None,
        workers: int = 1,
        sandbox: str | None = None,
        threads: int = 16,
    ):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if sandbox is None:
            sandbox, self.sandbox_note = choose_sandbox()
        else:
            self.sandbox_note = None
        self.sandbox = sandbox
        self.workers = workers
        self.threads = threads
        self.settings = {
            "DATABASE": str(self.workdir / "app.sqlite3"),
            "QUEUE_URL": f"sqlite:///{self.workdir / 'queue.sqlite3'}",
            "SANDBOX": sandbox,
            "ALLOW_LOCAL_SANDBOX": sandbox == "local",
            "DEVICE": "cpu",
            "SECRET_KEY": "e2e-" + secrets.token_hex(16),  # not JSON: stays a string
            "WARM_AT_START": False,  # each lesson's first grading computes its trusted runs itself
            **(settings or {}),
        }
        self.procs: list[tuple[str, subprocess.Popen, Path]] = []
        self.log_paths: dict[str, Path] = {}

    # ---------- starting and stopping ----------

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AMP_DOJO_")}
        for key, value in self.settings.items():
            env[f"AMP_DOJO_{key}"] = value if isinstance(value, str) else json.dumps(value)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "webapp.cli", *args],
                cwd=ROOT,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append((name, proc, log))
        self.log_paths[name] = log

    def start(self, timeout: float = 60.0) -> LiveApp:
        try:
            self._spawn(
                "serve", ["serve", "--host", "127.0.0.1", "--port", str(self.port), "--threads", str(self.threads)]
            )
            for i in range(self.workers):
                self._spawn(f"worker{i}", ["worker"])
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        """The server answers /api/lessons, and every worker has announced itself."""
        deadline = time.monotonic() + timeout
        server_up = False
        while time.monotonic() < deadline:
            for name, proc, _log in self.procs:
                if proc.poll() is not None:
                    raise AppDidNotStart(f"{name} exited with status {proc.returncode}\n{self.logs()}")
            if not server_up:
                try:
                    with urllib.request.urlopen(self.url + "/api/lessons", timeout=2) as response:
                        server_up = response.status == 200
                except (urllib.error.URLError, OSError):
                    pass
            workers_up = all(
                b"amp-dojo worker" in log.read_bytes() for name, _proc, log in self.procs if name.startswith("worker")
            )
            if server_up and workers_up:
                return
            time.sleep(0.2)
        raise AppDidNotStart(f"the app did not answer at {self.url} within {timeout:.0f} s\n{self.logs()}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to each process group (both commands stop cleanly on it), SIGKILL
        after `timeout`, then SIGKILL to whatever is left in the groups (sandboxed
        learner processes)."""
        for _name, proc, _log in self.procs:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for _name, proc, _log in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for _name, proc, _log in self.procs:
            _signal_group(proc, signal.SIGKILL)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []

    def __enter__(self) -> LiveApp:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def logs(self, tail: int = 4000) -> str:
        parts = []
        for name, log in self.log_paths.items():
            text = log.read_text(errors="replace") if log.exists() else ""
            parts.append(f"----- {name} log ({log}) -----\n{text[-tail:]}")
        return "\n".join(parts)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    # start_new_session=True: the group id is the leader's pid, valid while any member lives.
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass

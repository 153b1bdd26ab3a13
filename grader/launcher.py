"""The one seam through which worker processes are started. The checks only
ever see `WorkerProcess.request()`, so a sandbox (Docker, bubblewrap) is a new
launcher, not a change to grading."""

from __future__ import annotations

import json
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

GRADER_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 6 * 1024**3       # address space of a CPU worker
    output_bytes: int = 256 * 1024        # learner output kept for display
    file_bytes: int = 64 * 1024**2        # largest file the worker may write
    init_timeout_s: float = 120.0         # importing torch and the code, building the model
    step_timeout_s: float = 60.0          # one request of training steps


@dataclass(frozen=True)
class WorkerSpec:
    code: str
    filename: str                # e.g. submission.py: the name learners see in tracebacks
    exercise: dict               # Exercise.public(): never the reference solution
    device: str
    trace: bool = False
    threads: int = 1


class WorkerFailure(Exception):
    """The worker died or stopped answering; `payload` is shaped like a worker error."""

    def __init__(self, payload: dict):
        super().__init__(payload["message"])
        self.payload = payload


class OutputBuffer(threading.Thread):
    """Drains a pipe so the child never blocks on it, keeping a bounded head."""

    def __init__(self, pipe, limit: int):
        super().__init__(daemon=True)
        self.pipe, self.limit = pipe, limit
        self.kept = bytearray()
        self.total = 0
        self.start()

    def run(self):
        for chunk in iter(lambda: self.pipe.read1(65536), b""):
            self.total += len(chunk)
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    def text(self) -> str:
        text = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            text += f"\n[output truncated: {self.total} bytes in all, first {len(self.kept)} shown]"
        return text


class WorkerProcess:
    def __init__(self, proc: subprocess.Popen, workdir: Path, code_path: str, limits: Limits):
        self.proc, self.workdir, self.code_path, self.limits = proc, workdir, code_path, limits
        self.stderr = OutputBuffer(proc.stderr, limits.output_bytes)
        self._buffer = b""

    def request(self, message: dict, timeout: float | None = None) -> dict:
        timeout = timeout or self.limits.step_timeout_s
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerFailure(self._death_payload()) from None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerFailure(self._timeout_payload(timeout))
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise WorkerFailure(self._death_payload())
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            raise WorkerFailure({"kind": "protocol", "message": "the worker sent something that is not a reply "
                                 "(did the code write to the grader's channel?)", "line": None}) from None

    def _timeout_payload(self, timeout: float) -> dict:
        line = None
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGUSR1)  # faulthandler: where is it stuck?
            except OSError:
                pass
            for _ in range(30):  # the dump arrives through the stderr thread
                time.sleep(0.1)
                line = self._stuck_line()
                if line:
                    break
        self.kill()
        where = f" (it was running line {line})" if line else ""
        return {"kind": "timeout", "message": f"the code did not finish within {timeout:.0f} s{where}: "
                f"look for an endless loop or a wait that never ends", "line": line}

    def _stuck_line(self) -> int | None:
        text = self.stderr.kept.decode("utf-8", "replace")
        hits = re.findall(rf'File "{re.escape(self.code_path)}", line (\d+)', text)
        return int(hits[0]) if hits else None

    def _death_payload(self) -> dict:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if code is not None and code < 0 and -code == signal.SIGKILL:
            reason = "it was killed (signal 9), most likely for using too much memory"
            kind = "oom"
        elif code is not None and code < 0:
            reason, kind = f"it was killed by signal {signal.Signals(-code).name}", "crash"
        else:
            reason, kind = f"it exited with status {code} before answering (sys.exit or os._exit?)", "exit"
        return {"kind": kind, "message": f"the process running the code ended unexpectedly: {reason}", "line": None}

    def freeze(self):
        self._signal(signal.SIGSTOP)

    def thaw(self):
        self._signal(signal.SIGCONT)

    def _signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            pass

    def output(self) -> str:
        return self.stderr.text()

    def kill(self):
        self._signal(signal.SIGCONT)
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"cmd": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self.stderr.join(timeout=2)
        shutil.rmtree(self.workdir, ignore_errors=True)


def worker_env(workdir: Path, threads: int) -> dict:
    """A fresh environment: the grader's own variables (secrets included) never reach the code."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(GRADER_ROOT),
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": str(threads),
        "KINETO_LOG_LEVEL": "5",
    }
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


class LocalLauncher:
    """A plain child process: separate memory, but not isolated from the machine."""

    name = "local"
    isolated = False

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()

    def start(self, spec: WorkerSpec) -> WorkerProcess:
        workdir = Path(tempfile.mkdtemp(prefix="amp-dojo-"))
        code_path = workdir / spec.filename
        code_path.write_text(spec.code, encoding="utf-8")
        spec_path = workdir / "spec.json"
        spec_path.write_text(json.dumps({
            "code_path": str(code_path), "exercise": spec.exercise, "device": spec.device,
            "trace": spec.trace, "threads": spec.threads, "workdir": str(workdir),
        }))
        proc = subprocess.Popen(
            [sys.executable, "-m", "grader.worker", str(spec_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=workdir, env=worker_env(workdir, spec.threads), start_new_session=True,
            preexec_fn=self._limit(spec.device),
        )
        return WorkerProcess(proc, workdir, str(code_path), self.limits)

    def _limit(self, device: str):
        limits = self.limits

        def apply():
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
            if not device.startswith("cuda"):  # CUDA maps far more address space than it uses
                resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

        return apply

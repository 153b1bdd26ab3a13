"""The local launcher's workers forked from a zygote (grader/worker/zygote.py) that has imported PyTorch once:
the same worker, its code in its own process and session with its own folder, environment and limits, started
in milliseconds instead of the ~2 s of CPU an import of PyTorch costs. It is for many gradings in one process on
one's own machine (the test suite's thousand gradings); like LocalLauncher it isolates nothing, and only on a CPU
(a process that has touched CUDA cannot fork a working CUDA child; a CUDA worker starts from nothing)."""

from __future__ import annotations

import atexit
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from grader.sandboxes.launcher import GRADER_ROOT, LocalLauncher, make_workdir, worker_env
from grader.sandboxes.process import ProcessHandle, WorkerProcess


class Zygote:
    """One zygote process and the reader of its replies (pids, then exit statuses)."""

    def __init__(self):
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        home = make_workdir()
        self.home = home
        try:
            self.proc = self._spawn(theirs.fileno(), home)
        finally:
            theirs.close()
        self.sock = mine
        self.lock = threading.Lock()  # one request, then its pid, at a time
        self.pids: queue.Queue = queue.Queue()
        self.exits: dict[int, int] = {}
        self.exited = threading.Condition()
        self.closed = False
        threading.Thread(target=self._read, name="zygote-replies", daemon=True).start()

    def _spawn(self, fd: int, home) -> subprocess.Popen:
        """The zygote's process, given the socket's other end as `fd`."""
        return subprocess.Popen(
            [sys.executable, "-m", "grader.worker.zygote", str(fd)],
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd=home,
            env=worker_env(str(home), 1, pythonpath=str(GRADER_ROOT)),
            start_new_session=True,
        )

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                with self.exited:
                    self.closed = True
                    self.exited.notify_all()
                self.pids.put(None)
                return
            message = json.loads(data)
            if "pid" in message:
                self.pids.put(message["pid"])
            else:
                with self.exited:
                    self.exits[message["exited"]] = message["code"]
                    self.exited.notify_all()

    def fork(self, cwd: str, env: dict, rlimits: dict, fds: list[int], timeout: float, **more) -> int:
        """The new worker's pid (in the zygote's PID namespace); `more`: what an isolating fork needs too."""
        with self.lock:
            request = {"cwd": cwd, "env": env, "rlimits": rlimits, **more}
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
            try:
                pid = self.pids.get(timeout=timeout)
            except queue.Empty:
                pid = None
        if pid is None:
            raise OSError("the worker zygote did not answer")
        return pid

    def wait(self, pid: int, timeout: float | None) -> int | None:
        """The worker's exit code (negative: the signal), or None if it is still running after `timeout`."""
        end = None if timeout is None else time.monotonic() + timeout
        with self.exited:
            while pid not in self.exits:
                if self.closed:  # the zygote died: its orphans were reaped by init, their statuses lost
                    return None if _running(pid) else -signal.SIGKILL
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self.exited.wait(left if left is not None else 1.0)
            return self.exits.pop(pid)

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            shutil.rmtree(self.home, ignore_errors=True)


def add_pipes(ours: list[int], theirs: list[int]) -> None:
    """A forked worker's stdin, stdout and stderr: the launcher's ends to `ours`, the worker's to `theirs` (filled
    as they are made, so that a caller's cleanup closes whatever was made before a failure)."""
    for reading in (False, True, True):  # stdin, stdout, stderr, as the worker sees them
        r, w = os.pipe()
        ours.append(r if reading else w)
        theirs.append(w if reading else r)


def fork_rlimits(limits) -> dict:
    """The rlimits a forked CPU worker sets on itself (as `launcher.rlimits` sets a started one's)."""
    return {"RLIMIT_CORE": 0, "RLIMIT_FSIZE": limits.file_bytes, "RLIMIT_AS": limits.memory_bytes}


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


class ForkedHandle(ProcessHandle):
    """ProcessHandle's interface over a forked worker: its pipes are ours, its exit status the zygote's."""

    def __init__(self, zygote: Zygote, pid: int, stdin: int, stdout: int, stderr: int):
        self.zygote, self.pid = zygote, pid
        self.stdin = os.fdopen(stdin, "wb")
        self.stdout_fd = stdout
        self.stderr = os.fdopen(stderr, "rb")
        self.code: int | None = None

    def write(self, data: bytes):
        self.stdin.write(data)
        self.stdin.flush()

    def _status(self, timeout: float | None) -> int | None:
        if self.code is None:
            self.code = self.zygote.wait(self.pid, timeout)
        return self.code

    def alive(self) -> bool:
        return self._status(0) is None

    def signal_worker(self, sig):
        if self.alive():
            try:
                os.kill(self.pid, sig)
            except OSError:
                pass

    def kill(self):
        self.thaw()
        self.signal_all(signal.SIGKILL)
        self._status(10)

    def exit_status(self, timeout: float) -> tuple[int | None, bool]:
        code = self._status(timeout)
        if code is None:
            self.kill()
            code = self.code
        return code, code is not None and code in (-signal.SIGKILL, 128 + signal.SIGKILL)

    def cleanup(self):
        for closing in (self.stdin.close, lambda: os.close(self.stdout_fd), self.stderr.close):
            try:
                closing()
            except OSError:
                pass


class ForkLauncher(LocalLauncher):
    """LocalLauncher's workers, forked (see the module's docstring); a CUDA worker starts as LocalLauncher's."""

    def __init__(self, limits=None):
        super().__init__(limits)
        self._zygote: Zygote | None = None
        self._starting = threading.Lock()

    def zygote(self) -> Zygote:
        with self._starting:
            if self._zygote is None or self._zygote.closed:
                self._zygote = Zygote()
                atexit.register(self._zygote.close)
            return self._zygote

    def trusted(self):
        """The same zygote forks the trusted workers: a copy made before it started would start one of its own."""
        self.zygote()
        return super().trusted()

    def prepare(self, device: str, compiler: bool = False) -> WorkerProcess:
        """`compiler` is left out of forked workers: one whose code compiles loads the compiler when it compiles,
        on its grading's time (loading it in the zygote would put torch._dynamo into every worker it forks)."""
        if device != "cpu":
            return super().prepare(device, compiler)
        workdir = make_workdir()
        ours, theirs = [], []
        try:
            add_pipes(ours, theirs)
            zygote = self.zygote()
            pid = zygote.fork(
                str(workdir),
                worker_env(str(workdir), 1),
                fork_rlimits(self.limits),
                theirs,
                timeout=self.limits.init_timeout_s,
            )
        except BaseException:
            for fd in ours:
                os.close(fd)
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        return WorkerProcess(ForkedHandle(zygote, pid, *ours), workdir, None, self.limits)

    def close(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None

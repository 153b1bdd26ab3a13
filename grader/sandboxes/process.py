"""A worker process as the judge sees it, whatever sandbox it runs in: a pipe for
the protocol read with bounds and deadlines (a reply line of at most
MAX_REPLY_BYTES), its output kept within limits, and how it died, in words."""

from __future__ import annotations

import json
import logging
import os
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from grader.sandboxes import compile_cache
from grader.sandboxes.limits import Limits, WorkerSpec
from grader.worker import wire
from grader.worker.wire import parse_reply

MAX_REPLY_BYTES = 4 * 1024**2  # a step's losses, trace and counts: a few KB in practice

MAX_PARAMS_REPLY_BYTES = 512 * 1024**2  # the model's parameters, base64-encoded, where no model size is known

# faulthandler's dump: "Thread 0x… (most recent call first):", "Current thread …", and its indented frames
FAULTHANDLER_LINE = re.compile(
    r"^(?:(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):"
    r'|  File ".*", line \d+ in \S+|  <no Python frame>)\s*$'
)


class WorkerFailure(Exception):
    """The worker died or stopped answering; `payload` is shaped like a worker error."""

    def __init__(self, payload: dict):
        super().__init__(payload["message"])
        self.payload = payload


def failure(kind: str, key: str, at_line: int | None = None, **params) -> dict:
    """A worker error the grader words itself (grader/wording/catalog.py); `at_line` is the learner's line."""
    return worded(wire.failure(kind, key, at_line, **params))


def worded(error: dict) -> dict:
    """An error of the worker's protocol with its message in English words (the worker sends only keys)."""
    from grader.wording.catalog import Said

    return {**error, "message": str(Said.of(error["said"]))}


def params_reply_limit(state: dict, ranks: int = 1) -> int:
    """The most bytes a `save` reply may take for a model whose state the grader built itself (`state`, tensors):
    per rank, base64 of twice its float32 size and 1 MiB for torch.save's framing and the JSON around it. A
    submission that grows the model beyond that (a buffer of ballast) ends as an oversized reply, and the grading
    process never holds more than this in memory for it."""
    floats = sum(t.numel() * 4 for t in state.values())
    return ranks * (4 * (2 * floats + 1024**2) // 3 + 1024)


def death_failure(code: int | None, oom: bool) -> dict:
    """How a worker process ended, as its error: `code` is its exit status, or minus the signal that killed it."""
    return worded(wire.death_failure(code, oom))


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


def cpu_seconds_of(pids) -> float:
    """CPU time (user and system, the threads that ended and the children reaped included) that these host
    processes have used, read by the grader from /proc: nothing inside the sandbox can change it."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return total / tick


def host_pids(belongs) -> list[int]:
    """Host pids for which `belongs(pid)` holds; a process that ends while it is asked about (OSError) does not."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if belongs(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def pids_in_namespace(ns: str) -> list[int]:
    """Host pids of the processes in the PID namespace `ns` (readlink of /proc/PID/ns/pid)."""
    return host_pids(lambda pid: os.readlink(f"/proc/{pid}/ns/pid") == ns)


class ProcessHandle:
    """A worker started with subprocess (local, bwrap): pipes, signals to its group."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.pid = proc, proc.pid
        self.stdout_fd = proc.stdout.fileno()
        self.stderr = proc.stderr

    def write(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal_worker(self, sig):
        """Signals the Python process that runs the code (faulthandler's dump on SIGUSR1)."""
        try:
            os.kill(self.pid, sig)
        except OSError:
            pass

    def signal_all(self, sig):
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass

    def cpu_seconds(self) -> float | None:
        """CPU time of the worker's process group (local: not isolated, so the learner could leave it)."""
        return cpu_seconds_of(host_pids(lambda pid: os.getpgid(pid) == self.pid))

    def freeze(self):
        self.signal_all(signal.SIGSTOP)

    def thaw(self):
        self.signal_all(signal.SIGCONT)

    def kill(self):
        self.thaw()
        self.signal_all(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def exit_status(self, timeout: float) -> tuple[int | None, bool]:
        """(exit code or -signal, killed for memory?); kills a process that does not end in time."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        return code, code is not None and code in (-signal.SIGKILL, 128 + signal.SIGKILL)

    def cleanup(self):
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass


class SandboxDidNotStart(Exception):
    """A worker never said it was ready: the sandbox's fault (or the machine's), never the learner's, since
    no learner code exists in it yet."""


class WorkerProcess:
    """The grader's side of one worker, whatever started it. It starts blank: the process imports what a
    grading needs and says it is ready; `assign` then gives it one piece of code, once. `workdir` is the
    host folder the sandbox sees as `inside`; `code_path` is the code's path as the worker sees it, for
    tracebacks."""

    CANCEL_POLL_S = 0.2
    ranks = 1  # processes of the code behind this one channel (grader/worker/ranks.py); set by whoever starts it
    params_limit = MAX_PARAMS_REPLY_BYTES  # the largest `save` reply; set from the model's size by whoever starts it
    prepare_traces: list = []  # what the learner's prepare did, per rank, once init has answered
    on_budget = None  # called (seconds left) when a budget set meanwhile ends the request being waited on sooner
    collect_into: Path | None = None  # a trusted worker's: the compile cache its kernels go to when it closes

    def __init__(self, handle, workdir: Path, inside: str | None, limits: Limits):
        self.handle, self.workdir, self.limits = handle, workdir, limits
        self.inside = inside or str(workdir)
        self.code_path, self.spec = "", None
        self.device_inside: str | None = None  # the device's name inside the sandbox, where it differs
        self.ready = False
        self.stderr = OutputBuffer(handle.stderr, limits.output_bytes)
        self._buffer = bytearray()
        self.cancel: threading.Event | None = None  # set by whoever may stop the grading (the web app's Cancel)
        # The whole grading's length, once known (grader/judge/budget.py); another thread may set it while a request
        # waits, and the wait then ends by its `deadline`
        self.budget_s: float | None = None
        self.activity: dict = {}  # what the last request asked for: where a timeout says the code was
        self.loaded_at: float | None = None  # when the code's init request was sent (after the sandbox was ready)
        self.paused_s = 0.0  # time since then spent waiting for something else than the code

    def extend_budget(self, seconds: float) -> None:
        """Moves the budget's end by `seconds`: time the grading spent waiting on something else."""
        self.paused_s += seconds

    def set_budget(self, seconds: float | None) -> None:
        """Bounds every request (the current one too) by `seconds` of the code's own time after it started
        loading (waits for something else, `extend_budget`, do not count)."""
        self.budget_s = seconds

    @property
    def deadline(self) -> float | None:
        """When the budget ends (time.monotonic()), once it is known and the code has started loading."""
        if self.budget_s is None or self.loaded_at is None:
            return None
        return self.loaded_at + self.budget_s + self.paused_s

    def wait_ready(self, timeout: float | None = None) -> WorkerProcess:
        """Reads the worker's 'ready' line (once). Raises SandboxDidNotStart if it never comes."""
        if self.ready:
            return self
        try:
            reply = self.request(None, timeout=timeout or self.limits.init_timeout_s)
        except WorkerFailure as exc:
            if exc.payload["kind"] == "cancelled":
                raise
            raise SandboxDidNotStart(
                f"the worker did not start: {exc.payload['message']}\n{self.stderr.text()[-2000:]}"
            ) from None
        if reply.get("ready") is not True:
            raise SandboxDidNotStart(f"the worker did not start: it said {str(reply)[:200]}")
        self.ready = True
        return self

    def assign(self, spec: WorkerSpec) -> WorkerProcess:
        """The code and the public exercise this worker will run; it never gets another. The code lands in
        the folder the sandbox already sees, and the rest travels with the `init` request (init_message)."""
        if self.spec is not None:
            raise RuntimeError("a worker runs one piece of code only")
        self.spec, self.code_path = spec, f"{self.inside}/{spec.filename}"
        path = self.workdir / spec.filename
        path.write_text(spec.code, encoding="utf-8")
        path.chmod(0o644)  # the sandbox user is not the grader's user: it may read this file, nothing more
        if self.collect_into is None:  # a trusted run compiles from scratch: its compile time bounds the budget
            compile_cache.provide(spec.compile_cache and Path(spec.compile_cache), self.workdir)
        return self

    def init_message(self) -> dict:
        s = self.spec
        return {
            "cmd": "init",
            "spec": {
                "code_path": self.code_path,
                "exercise": s.exercise,
                "device": self.device_inside or s.device,
                "trace": s.trace,
                "threads": s.threads,
                "ranks": s.ranks,
            },
        }

    def request(
        self,
        message: dict,
        timeout: float | None = None,
        max_bytes: int = MAX_REPLY_BYTES,
        oversized: str = "error.oversized",
    ) -> dict:
        """One reply line, parsed; anything else the worker sends is its failure, never the grader's. A reply over
        `max_bytes` kills the worker and is worded by the message `oversized` (its {limit} in MiB)."""
        timeout = timeout or self.limits.step_timeout_s
        try:
            if message is not None:  # None: only read (the ready line)
                self.activity = {k: message.get(k) for k in ("cmd", "start")}
                if message.get("cmd") == "init" and self.loaded_at is None:
                    self.loaded_at = time.monotonic()
                self.handle.write((json.dumps(message) + "\n").encode())
        except (BrokenPipeError, OSError):
            raise WorkerFailure(self._death_payload()) from None
        limit_at = time.monotonic() + timeout
        fd = self.handle.stdout_fd
        scanned, seen = 0, self.deadline  # only new bytes are searched for the end of the line
        while (end := self._buffer.find(b"\n", scanned)) < 0:
            scanned = len(self._buffer)
            deadline = self.deadline
            budget_ends = deadline is not None and deadline < limit_at
            if budget_ends and deadline != seen and self.on_budget is not None:
                self.on_budget(deadline - time.monotonic())  # the limit said when the request began no longer holds
            seen = deadline
            left = (deadline if budget_ends else limit_at) - time.monotonic()
            if left <= 0:
                raise WorkerFailure(self._budget_payload() if budget_ends else self._timeout_payload(timeout))
            if self.cancel is not None and self.cancel.is_set():
                self.kill()
                raise WorkerFailure(failure("cancelled", "error.cancelled"))
            # short waits: a Cancel, or a budget that another thread sets meanwhile, ends this one within them
            ready, _, _ = select.select([fd], [], [], min(left, self.CANCEL_POLL_S if self.cancel else 1.0))
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise WorkerFailure(self._death_payload())
                self._buffer += chunk
                if len(self._buffer) > max_bytes:
                    self.kill()
                    self._buffer = bytearray()
                    raise WorkerFailure(failure("protocol", oversized, limit=max(1, round(max_bytes / 1024**2))))
        reply = parse_reply(self._take_line(end))
        if reply is None:
            self.kill()
            raise WorkerFailure(failure("protocol", "error.not_a_reply"))
        return reply

    def _take_line(self, end: int) -> str:
        """The buffer's first line, without its newline, as text ("" where it is not UTF-8: not a reply). Where the
        line is all the buffer holds (a reply is read to its end before the next request), the buffer itself is
        decoded and dropped: a large parameters reply is then held at most twice while it is parsed (this text,
        then the string inside it), not four times."""
        if end == len(self._buffer) - 1:
            line, self._buffer = self._buffer, bytearray()
            del line[end:]
        else:
            line = self._buffer[:end]
            del self._buffer[: end + 1]
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError:
            return ""

    def _timeout_payload(self, timeout: float) -> dict:
        line = self._stop_stuck()
        if line:
            return failure("timeout", "error.timeout_at", line, seconds=timeout, line=line)
        return failure("timeout", "error.timeout", seconds=timeout)

    def _budget_payload(self) -> dict:
        """The whole grading's budget ran out: where the code was (a step, with its line where the stack shows it),
        so the learner knows which part is slow."""
        from grader.wording.catalog import say

        line = self._stop_stuck()
        cmd, start = self.activity.get("cmd"), self.activity.get("start")
        if cmd == "init":
            during = say("budget.during_init")
        elif cmd == "steps" and isinstance(start, int):
            during = (
                say("budget.during_step_at", step=start + 1, line=line)
                if line
                else say("budget.during_step", step=start + 1)
            )
        else:
            during = say("budget.during_other")
        payload = failure("timeout", "error.budget", line, seconds=self.budget_s or 0.0, during=during)
        payload["step"] = start if cmd == "steps" and isinstance(start, int) else None
        return payload

    def _stop_stuck(self) -> int | None:
        """Asks a process that ran out of time where it is (its learner line, if the stack shows one), then kills
        it."""
        line = None
        if self.handle.alive():
            self.handle.signal_worker(signal.SIGUSR1)  # faulthandler: where is it stuck?
            for _ in range(30):  # the dump arrives through the stderr thread
                time.sleep(0.1)
                line = self._stuck_line()
                if line:
                    break
        self.kill()
        return line

    def _stuck_line(self) -> int | None:
        text = self.stderr.kept.decode("utf-8", "replace")
        hits = re.findall(rf'File "{re.escape(self.code_path)}", line (\d+)', text)
        return int(hits[0]) if hits else None

    def _death_payload(self) -> dict:
        return death_failure(*self.handle.exit_status(timeout=5))

    def cpu_seconds(self) -> float | None:
        """CPU time the sandbox's processes have used, all their threads summed (None where the grader cannot
        see them): timing on a CPU compares work per core, so extra threads buy no speedup."""
        read = getattr(self.handle, "cpu_seconds", None)
        try:
            return read() if read is not None else None
        except (OSError, ValueError):
            return None

    def freeze(self):
        try:
            self.handle.freeze()
        except OSError:
            raise WorkerFailure(self._death_payload()) from None

    def thaw(self):
        try:
            self.handle.thaw()
        except OSError:
            raise WorkerFailure(self._death_payload()) from None

    def output(self) -> str:
        """What the code printed. The stack dump the grader asks for on a timeout is the grader's evidence,
        not the learner's output: it goes to the server log."""
        text = self.stderr.text()
        kept, dump = [], []
        for line in text.splitlines(keepends=True):
            if FAULTHANDLER_LINE.match(line):
                dump.append(line)
            else:
                kept.append(line)
        if dump:
            logging.getLogger("grader.worker").info("stack dump of a worker that timed out:\n%s", "".join(dump))
        return "".join(kept)

    def kill(self):
        self.handle.kill()

    def close(self):
        if getattr(self, "_closed", False):
            return
        self._closed = True
        if self.handle.alive():
            try:
                self.handle.write(b'{"cmd": "exit"}\n')
                self.handle.exit_status(timeout=5)
            except OSError:
                pass
        self.kill()
        self.stderr.join(timeout=2)
        self.handle.cleanup()
        if self.collect_into is not None:  # a trusted worker's compiled kernels (Launcher.trusted)
            compile_cache.collect(self.workdir / compile_cache.WRITES, self.collect_into)
        shutil.rmtree(self.workdir, ignore_errors=True)

"""Warm, single-use sandboxes. Starting a sandbox and importing PyTorch in it
takes seconds, most of a small grading; a pool starts blank workers ahead of
time (grader/worker/serve.py imports what a grading needs and says it is ready) and
hands one to each new worker request. A blank has never seen code: it gets
exactly one piece (WorkerProcess.assign) and is thrown away after it, so
learners are as isolated from each other as with a cold start. The pool is a
launcher itself: whatever takes a launcher takes a pool.

Blanks are kept per device and per kind: a lesson whose code compiles gets blanks
that have loaded torch.compile's machinery too (another 2 s or so of imports); the
first such request starts them, and the pool keeps them topped up from then on."""

from __future__ import annotations

import logging
import queue as queues
import threading
import time
from collections import deque

from grader.sandboxes.launcher import Launcher
from grader.sandboxes.process import WorkerProcess

log = logging.getLogger("grader.sandboxes.pool")


Blank = tuple[str, bool]  # (device, compiler): what a blank is ready for


class WarmPool(Launcher):
    """Keeps `size` ready blanks per device and kind it has been asked for (and for `devices` from the start, of
    the `compiler` kind given).
    `quiet(device)` is a context manager the refill passes through before it starts a blank, so that no new
    one starts while a grading times on the device (grader/sandboxes/exclusive.py); a blank holds no lock itself."""

    REFILL_RETRY_S = 5.0

    def __init__(
        self,
        launcher: Launcher,
        size: int = 2,
        devices: tuple[str, ...] = (),
        quiet=None,
        refill: bool = True,
        compiler: bool = False,
    ):
        """`refill=False`: the blanks for `devices` are started once and not replaced (one `grader check`)."""
        self.launcher, self.size, self.refills = launcher, max(0, int(size)), refill
        self.name, self.isolated, self.limits = launcher.name, launcher.isolated, launcher.limits
        self.quiet = quiet
        self._ready: dict[Blank, deque[WorkerProcess]] = {}
        self._starting: dict[Blank, int] = {}  # ordered and not yet ready
        self._importing: dict[Blank, int] = {}  # of those, the ones whose process runs (it imports PyTorch)
        self._lock = threading.Condition()
        self._closed = False
        # Blanks are started from one long-lived thread: bwrap's --die-with-parent (PR_SET_PDEATHSIG) kills a
        # child when the *thread* that started it ends, so a short-lived thread would take its blank with it.
        self._orders: queues.Queue[Blank | None] = queues.Queue()
        self._spawner = threading.Thread(target=self._spawn_loop, name=f"pool-{self.name}", daemon=True)
        self._spawner.start()
        self.handed_out = 0  # blanks given to gradings (warm) and cold starts, for tests and benchmarks
        self.cold_starts = 0
        for device in devices:
            self._refill((device, compiler))

    def identity(self) -> str:
        return self.launcher.identity()

    def background(self) -> Launcher:
        """The launcher behind the pool, lowered: the warm blanks are kept for learners' gradings."""
        return self.launcher.background()

    def trusted(self) -> Launcher:
        """The launcher behind the pool: a blank cannot be given a writable compile folder after it started."""
        return self.launcher.trusted()

    def prepare(self, device: str, compiler: bool = False) -> WorkerProcess:
        """A ready blank; else the first of those still starting (it began before a cold one could); else a
        cold start. Either way the pool is topped up again."""
        worker = None
        kind = (device, compiler)
        deadline = time.monotonic() + self.limits.init_timeout_s
        with self._lock:
            queue = self._ready.setdefault(kind, deque())
            while worker is None:
                while queue and worker is None:
                    candidate = queue.popleft()
                    if candidate.handle.alive():
                        worker = candidate
                    else:  # died while it waited (e.g. killed by the machine): never handed out
                        candidate.close()
                # wait only for a blank whose process already runs: one still waiting to be started may wait
                # for a timing grading, which may wait for this one
                if worker is not None or self._closed or not self._importing.get(kind, 0):
                    break
                if not self._lock.wait(max(0.0, deadline - time.monotonic())):
                    break
            self.handed_out += 1
        if self.refills:
            self._refill(kind)
        if worker is not None:
            return worker
        self.cold_starts += 1
        log.info("no warm %s sandbox for %s is ready: starting one cold", self.name, device)
        return self.launcher.prepare(device, compiler)

    def ready_count(self, device: str, compiler: bool = False) -> int:
        with self._lock:
            return len(self._ready.get((device, compiler), ()))

    def wait_until_ready(self, device: str, timeout: float = 120.0, compiler: bool = False) -> bool:
        """For benchmarks and tests: until `size` blanks of `device` (and kind) are ready."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._ready.get((device, compiler), ())) < self.size:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._lock.wait(left)
        return True

    def _refill(self, kind: Blank) -> None:
        with self._lock:
            missing = self.size - len(self._ready.get(kind, ())) - self._starting.get(kind, 0)
            if self._closed or missing <= 0:
                return
            self._starting[kind] = self._starting.get(kind, 0) + missing
        for _ in range(missing):
            self._orders.put(kind)

    def _spawn_loop(self) -> None:
        while (kind := self._orders.get()) is not None:
            device, compiler = kind
            try:
                if self.quiet is not None:
                    with self.quiet(device):  # not while a grading times on the device
                        pass
                worker = self.launcher.prepare(device, compiler)
                with self._lock:
                    self._importing[kind] = self._importing.get(kind, 0) + 1
            except Exception as exc:  # noqa: BLE001 - the machine's trouble (no learner code runs here): retried
                log.warning("a warm %s sandbox for %s could not be started: %s", self.name, device, exc)
                self._arrived(kind, None)
                continue
            threading.Thread(
                target=self._await_ready, args=(kind, worker), daemon=True, name=f"pool-ready-{self.name}"
            ).start()

    def _await_ready(self, kind: Blank, worker: WorkerProcess) -> None:
        try:
            worker.wait_ready()
        except Exception as exc:  # noqa: BLE001 - the machine's trouble (no learner code runs here): retried
            if not self._closed:  # else close() killed it: nothing went wrong
                log.warning("a warm %s sandbox for %s did not start: %s", self.name, kind[0], exc)
            worker.close()
            worker = None
        with self._lock:
            self._importing[kind] -= 1
        self._arrived(kind, worker)

    def _arrived(self, kind: Blank, worker: WorkerProcess | None) -> None:
        with self._lock:
            self._starting[kind] -= 1
            kept = worker is not None and not self._closed
            if kept:
                self._ready.setdefault(kind, deque()).append(worker)
            self._lock.notify_all()
        if worker is not None and not kept:  # the pool closed meanwhile
            worker.close()
        if worker is None and not self._closed:
            threading.Timer(self.REFILL_RETRY_S, self._refill, args=(kind,)).start()

    def close(self) -> None:
        """Kills every blank that is still waiting."""
        self._orders.put(None)
        with self._lock:
            self._closed = True
            idle = [w for queue in self._ready.values() for w in queue]
            self._ready.clear()
            self._lock.notify_all()
        for worker in idle:
            worker.close()

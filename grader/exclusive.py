"""Who may use a device while a grading times on it. Several gradings may run
their correctness phases at once (call order, parity, coverage need no device
of their own), but timed speedup rounds must have the device alone, or another
learner's training would be in the measurement. So every use of a device holds
it shared, and timing holds it alone: a readers-writer lock per device, made
of flock(2) locks on files, so it holds across the worker processes of one
host as well as across threads. A turnstile keeps a stream of shared users
from starving a grading that waits to time."""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


def lock_dir() -> Path:
    """$AMP_DOJO_LOCK_DIR, else a folder in the system's temporary directory (one per host)."""
    path = Path(os.environ.get("AMP_DOJO_LOCK_DIR") or Path(tempfile.gettempdir()) / "amp-dojo-locks")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _name(device: str) -> str:
    if device == "cuda":
        device = "cuda:0"
    return "".join(c if c.isalnum() else "-" for c in device)


@contextmanager
def _flock(path: Path, mode: int):
    """Each holder opens the file itself: flock locks belong to an open file, so threads of one process
    exclude each other like processes do."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _paths(device: str) -> tuple[Path, Path]:
    folder = lock_dir()
    return folder / f"{_name(device)}.turnstile", folder / f"{_name(device)}.lock"


@contextmanager
def sharing(device: str):
    """Use of the device beside other gradings (correctness phases, starting warm sandboxes)."""
    turnstile, lock = _paths(device)
    with _flock(turnstile, fcntl.LOCK_EX):  # waits while a timing grading is queued at the turnstile
        pass
    with _flock(lock, fcntl.LOCK_SH):
        yield


@contextmanager
def alone(device: str):
    """The device to oneself: no other grading uses it meanwhile (timed rounds, CUDA memory peaks)."""
    turnstile, lock = _paths(device)
    with _flock(turnstile, fcntl.LOCK_EX):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
    try:
        yield
    finally:
        os.close(fd)


class Hold:
    """One grading's hold on its device, moved between shared and alone as its phases change."""

    def __init__(self, device: str):
        self.device = device
        self._held = None

    def share(self) -> None:
        self._switch(sharing)

    def alone(self) -> None:
        self._switch(alone)

    def release(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            held.__exit__(None, None, None)

    def _switch(self, how) -> None:
        self.release()  # a shared hold is given up before waiting to be alone: two waiters never deadlock
        held = how(self.device)
        held.__enter__()
        self._held = held

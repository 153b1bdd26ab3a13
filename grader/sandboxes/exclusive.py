"""Who may use a device while a grading times on it. Several gradings may run
their correctness phases at once (call order, parity, coverage need no device
of their own), but timed speedup rounds must have the device alone, or another
learner's training would be in the measurement. So every use of a device holds
it shared, and timing holds it alone: a readers-writer lock per device, made
of flock(2) locks on files, so it holds across the worker processes of one
host as well as across threads. A turnstile keeps a stream of shared users
from starving a grading that waits to time.

The lock files are the grader's own: in a folder of its user that nobody else
may write in, opened without following links, mode 0600. Anyone who could open
them could hold a lock forever and stop every grading of the host."""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from grader.errors import EnvironmentProblem

FILE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def lock_dir() -> Path:
    """$AMP_DOJO_LOCK_DIR, else amp-dojo-locks-<uid> in the system's temporary directory: one per host and user,
    made mode 0700. Refused if it is a link, is not the grader's user's, or others may write in it (they could
    plant a lock file of their own there)."""
    configured = os.environ.get("AMP_DOJO_LOCK_DIR")
    path = Path(configured) if configured else Path(tempfile.gettempdir()) / f"amp-dojo-locks-{os.geteuid()}"
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    _check_dir(path, os.lstat(path))
    return path


def _refuse(path: Path, why: str) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"the device lock {path} {why}: remove it, or set AMP_DOJO_LOCK_DIR to a folder of "
        f"the grader's user that no other user may write in"
    )


def _check_dir(path: Path, st: os.stat_result):
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, "is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(path, "is not a folder")
    if st.st_uid != os.geteuid():
        raise _refuse(path, f"belongs to another user (uid {st.st_uid}, the grader runs as {os.geteuid()})")
    if st.st_mode & 0o022:
        raise _refuse(path, f"may be written in by other users (mode {stat.S_IMODE(st.st_mode):o})")


def _open(path: Path) -> int:
    """The lock file, created 0600; a link planted at its name is refused (O_NOFOLLOW), and one of ours left
    readable by others (an older version made them 0666) is made private again."""
    try:
        fd = os.open(path, FILE_FLAGS, 0o600)
    except OSError as exc:
        raise _refuse(path, f"cannot be opened safely ({exc.strerror}; a symbolic link?)") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        raise _refuse(path, "is not a plain file of the grader's user")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def _name(device: str) -> str:
    if device == "cuda":
        device = "cuda:0"
    return "".join(c if c.isalnum() else "-" for c in device)


@contextmanager
def _flock(path: Path, mode: int):
    """Each holder opens the file itself: flock locks belong to an open file, so threads of one process
    exclude each other like processes do."""
    fd = _open(path)
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
        fd = _open(lock)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
    try:
        yield
    finally:
        os.close(fd)


def in_use(device: str) -> bool:
    """Whether a grading holds the device now (shared or alone), in any process of this host and user: what
    work done ahead of learners (grader/judge/warming.py) gives way to. A probe that never waits: the lock taken
    alone without blocking and let go at once (a grading that asks for it meanwhile waits that instant)."""
    _turnstile, lock = _paths(device)
    fd = _open(lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


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

"""Learner code that writes forged replies to the grader: several attack tests
start from it, so it is written once."""

WRITABLE_PIPES = '''
import fcntl, os


def writable_pipes():
    """Every pipe this process may write to: the worker's reply channel is one of them."""
    for fd in range(3, 64):
        try:
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            if writable and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                yield fd
        except OSError:
            pass
'''


def forger(payload: bytes) -> str:
    """Module-level learner code: FORGED, the bytes to write, and writable_pipes()."""
    return f"FORGED = {payload!r}\n" + WRITABLE_PIPES

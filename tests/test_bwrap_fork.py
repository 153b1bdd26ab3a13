"""bwrap workers forked from a zygote (grader/sandboxes/bwrap_fork.py): each fork isolates itself from its
siblings as a sandbox started from nothing would be, and where forks cannot isolate themselves the workers start
from nothing. The attacks on the host (tests/attacks, test_sandbox.py) already run in forked bwrap workers;
these are the attacks a fork adds: another learner's worker, forked from the same zygote, running beside it."""

import secrets
import threading
import time
from dataclasses import replace

import pytest
from conftest import TEST_LIMITS

from grader import runner
from grader.sandboxes import bwrap
from grader.sandboxes.bwrap_fork import ForkingBwrapLauncher

pytestmark = pytest.mark.skipif(bwrap.unavailable_reason() is not None, reason="bwrap cannot run here")

# Leaves something in every place a sibling might look, then stays alive while the sibling looks.
PLANTS = """
import ctypes, os, socket, time
for folder in ("/tmp", "/dev/shm"):
    with open(f"{folder}/__MARKER__", "w") as fh:
        fh.write("__MARKER__")
listener = socket.socket(socket.AF_UNIX)
listener.bind("\\0__MARKER__")
listener.listen()
tcp = socket.create_server(("127.0.0.1", __PORT__))
libc = ctypes.CDLL(None)
segment = libc.shmget(__KEY__, 4096, 0o1666)
print("planted", segment)
time.sleep(8)
"""

# Looks for the sibling's things, its processes and the other workers' folders; says LEAK for each found.
LOOKS = """
import ctypes, os, socket
for folder in ("/tmp", "/dev/shm", "/workdirs", "/proc", "/dev/pts"):
    try:
        names = os.listdir(folder)
    except OSError:
        names = []
    print(folder, names)
    if "__MARKER__" in names or (folder in ("/workdirs", "/proc", "/dev/pts") and names):
        print("LEAK: a sibling's", folder)
for address in ("\\0__MARKER__",):
    try:
        socket.socket(socket.AF_UNIX).connect(address)
        print("LEAK: the sibling's unix socket")
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", __PORT__), timeout=1)
    print("LEAK: the sibling's loopback port")
except OSError:
    pass
if ctypes.CDLL(None).shmget(__KEY__, 0, 0) != -1:
    print("LEAK: the sibling's System V shared memory")
mine = os.getsid(0)  # its own threads and processes share its session; init (1) is the sandbox's own
for pid in range(2, 4096):
    try:
        if os.getsid(pid) != mine:
            print("LEAK: a process outside its own sandbox", pid)  # seen is enough: no test kills what it finds
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) == 0:
    print("LEAK: a new user namespace")
if libc.umount2(b"/proc", 2) == 0 or libc.umount2(b"/workdirs", 2) == 0:
    print("LEAK: a mount undone")
print("looked")
"""


@pytest.fixture(scope="module")
def forking():
    launcher = ForkingBwrapLauncher(replace(TEST_LIMITS, tmp_bytes=64 * 1024**2, processes=128))
    yield launcher
    launcher.close()


def test_a_forked_worker_finds_nothing_of_a_sibling_forked_beside_it(forking, exercises):
    marker = f"amp-dojo-sibling-{secrets.token_hex(6)}"
    port, key = 20000 + secrets.randbelow(20000), 0x5A000000 + secrets.randbelow(1 << 16)

    def filled(text):  # the probe at module load, then the lesson's reference, whose grading passes
        probe = text.replace("__MARKER__", marker).replace("__PORT__", str(port)).replace("__KEY__", str(key))
        return probe + "\n" + exercises["autocast"].reference

    planted = {}
    planter = threading.Thread(
        target=lambda: planted.update(
            result=runner.run(exercises["autocast"], filled(PLANTS), device="cpu", launcher=forking)
        )
    )
    planter.start()
    time.sleep(3)  # the planter is in its 8 s sleep, everything planted
    looked = runner.run(exercises["autocast"], filled(LOOKS), device="cpu", launcher=forking)
    planter.join()
    if not forking.forks.zygotes:
        pytest.skip("forks cannot isolate themselves here: bwrap's workers start from nothing")
    assert "planted" in planted["result"].output, planted["result"].to_dict()
    assert "looked" in looked.output, looked.to_dict()
    assert "LEAK" not in looked.output, looked.output
    assert planted["result"].status == "pass", planted["result"].to_dict()


def test_bwrap_workers_start_from_nothing_where_forks_cannot_isolate_themselves(exercises, monkeypatch):
    """A machine that refuses user namespaces inside a sandbox (as --disable-userns does): the probe fork fails,
    and every worker is a sandbox of its own; the learner sees no difference."""
    made = bwrap.command

    def no_userns(*args, **kwargs):
        args_out = made(*args, **kwargs)
        return [args_out[0], "--disable-userns", *args_out[1:]] if kwargs.get("zygote") else args_out

    monkeypatch.setattr(bwrap, "command", no_userns)
    launcher = ForkingBwrapLauncher(TEST_LIMITS)
    try:
        result = runner.run(exercises["autocast"], exercises["autocast"].reference, device="cpu", launcher=launcher)
        assert launcher.forks.usable is False and not launcher.forks.zygotes
    finally:
        launcher.close()
    assert result.status == "pass", result.to_dict()


def test_a_command_that_grades_once_starts_no_zygote(exercises):
    """`grader check` without --watch: a zygote would cost what forking from it saves."""
    from grader.cli.options import warm_launcher

    launcher = ForkingBwrapLauncher(TEST_LIMITS)
    pool = warm_launcher(launcher, "cpu", again=False)
    try:
        result = runner.run(exercises["autocast"], exercises["autocast"].reference, device="cpu", launcher=pool)
        assert result.status == "pass", result.to_dict()
        assert launcher.forks.zygotes == {}
    finally:
        pool.close()
        launcher.close()


def test_workers_start_from_nothing_where_python_lives_under_tmp(monkeypatch):
    """The /tmp a fork mounts for itself would hide an interpreter bound under /tmp (a project cloned there)."""
    from grader.sandboxes import bwrap_fork

    monkeypatch.delenv(bwrap_fork.DISABLED, raising=False)
    monkeypatch.setattr(bwrap, "python_binds", lambda: ["--ro-bind", "/tmp/project/.venv", "/tmp/project/.venv"])
    assert bwrap_fork.Forks(TEST_LIMITS).usable is False
    monkeypatch.setattr(bwrap, "python_binds", lambda: ["--ro-bind", "/opt/project/.venv", "/opt/project/.venv"])
    assert bwrap_fork.Forks(TEST_LIMITS).usable is bwrap_fork.isolation.supported()

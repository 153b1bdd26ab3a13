"""The device locks (grader/sandboxes/exclusive.py) are the grader's own: whoever could open them could hold one forever
and stop every grading of the host, so they live in a private folder of the grader's user and nothing planted
there by someone else is used."""

import fcntl
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.errors import EnvironmentProblem
from grader.sandboxes import exclusive


@pytest.fixture
def lock_dir(tmp_path, monkeypatch):
    path = tmp_path / "locks"
    monkeypatch.setenv("AMP_DOJO_LOCK_DIR", str(path))
    return path


def test_lock_files_are_private_to_the_graders_user(lock_dir):
    with exclusive.sharing("cpu"):
        pass
    assert stat.S_IMODE(lock_dir.stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in lock_dir.iterdir()}
    assert modes == {"cpu.lock": 0o600, "cpu.turnstile": 0o600}


def test_the_default_folder_is_per_user_and_private(monkeypatch, tmp_path):
    monkeypatch.delenv("AMP_DOJO_LOCK_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(exclusive.tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    folder = exclusive.lock_dir()
    assert folder == tmp_path / f"amp-dojo-locks-{os.geteuid()}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_link_planted_at_a_lock_files_name_is_refused(lock_dir, tmp_path):
    lock_dir.mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    target.write_text("")
    (lock_dir / "cpu.turnstile").symlink_to(target)
    with pytest.raises(EnvironmentProblem, match="symbolic link"):
        with exclusive.sharing("cpu"):
            pass


def test_a_linked_lock_folder_is_refused(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("AMP_DOJO_LOCK_DIR", str(tmp_path / "link"))
    with pytest.raises(EnvironmentProblem, match="symbolic link"):
        exclusive.lock_dir()


def test_a_lock_folder_of_another_user_is_refused(lock_dir, monkeypatch):
    lock_dir.mkdir(mode=0o700)
    monkeypatch.setattr(exclusive.os, "geteuid", lambda: lock_dir.stat().st_uid + 1)  # as if someone else made it
    with pytest.raises(EnvironmentProblem, match="another user"):
        exclusive.lock_dir()


def test_a_lock_folder_others_may_write_in_is_refused(lock_dir):
    lock_dir.mkdir()
    lock_dir.chmod(0o777)
    with pytest.raises(EnvironmentProblem, match="written in by other users"):
        exclusive.lock_dir()


def test_a_lock_file_left_open_to_others_is_made_private(lock_dir):
    lock_dir.mkdir(mode=0o700)
    (lock_dir / "cpu.lock").touch()
    (lock_dir / "cpu.lock").chmod(0o666)  # as an older version left them
    with exclusive.alone("cpu"):
        pass
    assert stat.S_IMODE((lock_dir / "cpu.lock").stat().st_mode) == 0o600


OTHER_USER_FLOCK = """
import fcntl, os, sys
os.setgid(65534)
os.setuid(65534)
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked")
except OSError as exc:
    print(type(exc).__name__)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_hold_a_device_lock(monkeypatch):
    base = Path(tempfile.mkdtemp(prefix="amp-dojo-test-"))  # one others may pass through, as /tmp is
    base.chmod(0o755)
    lock_dir = base / "locks"
    monkeypatch.setenv("AMP_DOJO_LOCK_DIR", str(lock_dir))
    try:
        _another_user_cannot_hold(lock_dir)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _another_user_cannot_hold(lock_dir):
    with exclusive.sharing("cpu"):
        pass
    for name in ("cpu.lock", "cpu.turnstile"):
        done = subprocess.run(
            [sys.executable, "-c", OTHER_USER_FLOCK, str(lock_dir / name)], capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip() == "PermissionError", done.stdout + done.stderr
    with exclusive.alone("cpu"):  # and the grader still gets it
        fd = os.open(lock_dir / "cpu.lock", os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        finally:
            os.close(fd)

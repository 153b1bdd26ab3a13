"""The host's files are the grader's alone: the instance folder is 0700, and the
files the web app and its workers keep (the database and the SQLite queue with
their -wal and -shm files, the secret key) 0600, so no other local account
reads learners' code, password hashes or session tokens. Used by the app and
by a worker alone (which imports nothing of the web app's request handling)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def private_dir(path: str | Path) -> Path:
    """The folder, made if missing, readable by this user only (0700): a file made in it later, by SQLite (its
    -wal and -shm files) or anyone, is out of other local accounts' reach whatever its own mode."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)  # mode applies to the last part only: parents as usual
    if stat.S_IMODE(path.stat().st_mode) != 0o700:
        path.chmod(0o700)
    return path


def private_file(path: str | Path) -> Path:
    """The file, made empty if missing, with mode 0600, before anything (SQLite, Huey) opens it: SQLite makes
    its -wal and -shm side files with the mode of the database file, so they are 0600 too. A file of an older
    installation (and its side files) is narrowed to 0600. A missing folder for it is made 0700; an existing
    one is left as it is (the instance folder is narrowed where the settings are read: webapp.load_settings)."""
    path = Path(path)
    if not path.parent.exists():
        private_dir(path.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    for each in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        try:
            if stat.S_IMODE(each.stat().st_mode) & 0o077:
                each.chmod(0o600)
        except FileNotFoundError:
            pass
    return path

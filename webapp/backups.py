"""Backups of an instance and their restore (`amp-dojo backup PATH`, `amp-dojo restore PATH`; docs/operations.md).

Everything a learner's work is made of (accounts, courses, submissions with their code, results, events,
findings) is rows of the one database, so a backup is that database, taken while the app runs: SQLite's online
backup API (one consistent snapshot, however many writers; a copy of the file alone would miss what the WAL holds
yet), or `pg_dump` in its custom format (a snapshot too) for PostgreSQL. Beside it, manifest.json says what the
backup is (the app version and the schema's Alembic revision) and where the rest of the instance lives, copied
or not:

- the grading queue: not copied. It holds only attempts under way, which the restore hands to the new queue again;
- the trusted runs (FP32 baselines): not copied. A worker computes them again (WARM_AT_START, or a lesson's
  first grading), from the lessons alone;
- the secret key: its location only, never the key. It signs session cookies and CSRF tokens, nothing stored:
  a backup (often kept elsewhere, by other people) must not carry a key that forges sessions, and an instance
  restored without it loses no work, only everyone's sign-in (they sign in again);
- the lessons folder (EXERCISES): its location; lessons are authored files, kept in version control.

A restore goes into an empty instance only (no rows in any table: a fresh database, or one `init-db` made), and
migrates the schema up when the backup is older than the code."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from importlib import metadata
from pathlib import Path

import sqlalchemy as sa

from webapp import db as database
from webapp.files import private_dir, private_file

FORMAT = 1
MANIFEST = "manifest.json"
SQLITE_FILE = "database.sqlite3"
POSTGRES_FILE = "database.pgdump"


class BackupError(Exception):
    """What stops a backup or a restore, worded for the admin who runs it."""


def backup(config, path: str | Path, instance_path: str) -> dict:
    """Writes the backup into the folder `path` (made 0700; it must not hold anything yet); returns the manifest.
    `instance_path`: where the secret key is kept when no setting gives it."""
    folder = Path(path)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BackupError(f"{folder} already exists and is not an empty folder: name a new one")
    private_dir(folder)
    url = config["DATABASE"]
    if database.is_sqlite(url):
        revision = _sqlite_backup(url, folder / SQLITE_FILE)
        kind, file = "sqlite", SQLITE_FILE
    else:
        revision = _postgres_backup(url, folder / POSTGRES_FILE)
        kind, file = "postgresql", POSTGRES_FILE
    manifest = _manifest(config, kind, file, revision, instance_path)
    (private_file(folder / MANIFEST)).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _sqlite_backup(url: str, target: Path) -> str | None:
    """One step of the online backup API: a read transaction that writers (WAL) never wait for."""
    source_path = database.sqlite_path(database.database_url(url))
    if not source_path or not Path(source_path).exists():
        raise BackupError(f"there is no database at {source_path}")
    private_file(target)
    source = sqlite3.connect(source_path, timeout=database.BUSY_TIMEOUT_S)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
        return _revision(copy)
    finally:
        copy.close()
        source.close()


def _revision(connection: sqlite3.Connection) -> str | None:
    try:
        return connection.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    except (sqlite3.Error, TypeError):
        return None


def _postgres_backup(url: str, target: Path) -> str | None:
    with database.connect(url) as db:
        revision = database.current_revision(db)
    private_file(target)
    _pg_tool("pg_dump", url, "--format=custom", "--no-owner", "--no-privileges", f"--file={target}")
    return revision


def _pg_tool(tool: str, url: str, *args: str) -> None:
    """pg_dump or pg_restore on the database of `url`; its password goes by PGPASSWORD, never the command line."""
    if shutil.which(tool) is None:
        raise BackupError(f"{tool} is not installed (Debian: apt-get install postgresql-client)")
    parsed = sa.engine.make_url(database.database_url(url))
    env = {**os.environ}
    if parsed.password:
        env["PGPASSWORD"] = str(parsed.password)
    plain = parsed.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    done = subprocess.run([tool, *args, f"--dbname={plain}"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise BackupError(f"{tool} failed: {done.stderr.strip()[-2000:]}")


def _manifest(config, kind: str, file: str, revision: str | None, instance_path: str) -> dict:
    trusted = config.get("TRUSTED_RUNS")
    return {
        "format": FORMAT,
        "app": "amp-dojo",
        "version": metadata.version("amp-dojo"),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "database": {"kind": kind, "file": file, "taken_from": database.redacted(config["DATABASE"])},
        "alembic_revision": revision,
        "queue": {
            "where": _redacted_queue(config["QUEUE_URL"]),
            "copied": False,
            "why": "it holds only attempts under way: `amp-dojo restore` hands the submissions that were waiting "
            "or being graded to the restored instance's queue again",
        },
        "trusted_runs": {
            "where": {"queue": "the grading queue's storage", "": "each worker's memory"}.get(trusted, trusted),
            "copied": False,
            "why": "recomputed by a worker from the lessons (WARM_AT_START, or each lesson's first grading)",
        },
        "secret_key": {
            "where": "the SECRET_KEY setting"
            if config.get("SECRET_KEY")
            else os.path.join(instance_path, "secret_key"),
            "copied": False,
            "why": "it signs sessions, nothing stored; a restore without it only signs everyone out, and a "
            "backup that carried it could forge sessions",
        },
        "lessons": {"where": config.get("EXERCISES") or "the installed exercises/ folder", "copied": False},
        "private_files": {
            "copied": [file],
            "why": "learners' code, results, accounts and courses are all rows of the database; the instance "
            "folder holds nothing else of theirs",
        },
    }


def _redacted_queue(url: str) -> str:
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


# ---------- restore ----------


def read_manifest(path: str | Path) -> dict:
    folder = Path(path)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise BackupError(f"{folder} is not a backup of AMP Dojo: it has no {MANIFEST}") from None
    except ValueError as exc:
        raise BackupError(f"{folder / MANIFEST} is not valid JSON: {exc}") from None
    if manifest.get("app") != "amp-dojo" or manifest.get("format") != FORMAT:
        raise BackupError(f"{folder / MANIFEST} is not a backup this version of AMP Dojo can read")
    return manifest


def restore(config, path: str | Path) -> dict:
    """Restores the backup at `path` into the (empty) database of `config`, migrates it up and hands the
    attempts that were under way to the queue. Returns {"from": revision, "to": revision, "requeued": n}."""
    folder = Path(path)
    manifest = read_manifest(folder)
    url = config["DATABASE"]
    kind = "sqlite" if database.is_sqlite(url) else "postgresql"
    if manifest["database"]["kind"] != kind:
        raise BackupError(f"this backup is of a {manifest['database']['kind']} database; DATABASE here is {kind}")
    revision = manifest.get("alembic_revision")
    if revision is not None and revision not in _known_revisions():
        raise BackupError(f"this backup's schema ({revision}) is newer than this code's: update AMP Dojo first")
    tables = _tables_in_use(url)
    if tables:
        raise BackupError(
            f"the database at {database.redacted(url)} is not empty ({', '.join(tables)} hold rows): restore "
            "into a new, empty database"
        )
    database.dispose(url)
    if kind == "sqlite":
        _sqlite_restore(folder / manifest["database"]["file"], url)
    else:
        _drop_empty_tables(url)
        _pg_tool("pg_restore", url, "--no-owner", "--no-privileges", "--exit-on-error", str(folder / POSTGRES_FILE))
    database.dispose(url)
    with database.connect(url) as db:
        before = database.current_revision(db)
        after = database.init_db(db)
        requeued = requeue_under_way(db, config)
    return {"from": before, "to": after, "requeued": requeued}


def _known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    return {script.revision for script in ScriptDirectory.from_config(database._alembic_config()).walk_revisions()}


def _tables_in_use(url: str) -> list[str]:
    """The app's tables that hold a row (an instance `init-db` made, or one started once, has none)."""
    with database.connect(url) as db:
        names = sa.inspect(db.connection).get_table_names()
        return [
            name
            for name in names
            if name not in NOT_CONTENT and db.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone() is not None
        ]


# Rows that say what the schema is, not what the instance holds. (The workers' heartbeats live in the queue's
# storage, not here: webapp/workers.py.)
NOT_CONTENT = ("alembic_version",)


def _drop_empty_tables(url: str) -> None:
    """The empty tables `init-db` may have made (maybe of a newer schema than the backup's) make way for the
    backup's own, which then migrate up like any older database."""
    with database.connect(url) as db:
        for name in sa.inspect(db.connection).get_table_names():
            db.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')


def _sqlite_restore(source: Path, url: str) -> None:
    """The backup API again, backwards: the target's file is replaced page by page, its mode (0600) kept."""
    if not source.exists():
        raise BackupError(f"the backup's database file {source} is missing")
    target = database.sqlite_path(database.database_url(url))
    private_file(target)
    backup_db = sqlite3.connect(source)
    live = sqlite3.connect(target, timeout=database.BUSY_TIMEOUT_S)
    try:
        backup_db.backup(live)
    finally:
        live.close()
        backup_db.close()


def requeue_under_way(db, config) -> int:
    """The submissions that were in the old queue (waiting, or being graded) go to this instance's queue at the
    same attempt, as waiting ones: a restored instance's queue never held their tasks. Cancelled ones whose
    task the old queue still held let go of their place. Returns how many were handed over."""
    from webapp import make_queue, store
    from webapp.db import transaction

    queue = make_queue(config)
    try:
        with transaction(db):
            db.execute(
                "UPDATE submissions SET enqueued_at = NULL WHERE error = 'cancelled' AND enqueued_at IS NOT NULL"
            )
            rows = db.execute(
                "SELECT id FROM submissions WHERE status IN ('queued', 'running') AND enqueued_at IS NOT NULL"
            ).fetchall()
            now = time.time()
            for row in rows:
                db.execute(
                    "UPDATE submissions SET status = 'queued', enqueued_at = ?, started_at = NULL, hb_value = NULL, "
                    "hb_seen_at = NULL WHERE id = ?",
                    (now, row["id"]),
                )
                queue.enqueue(store.payload(store.get(db, row["id"]), config))
        return len(rows)
    finally:
        queue.close()

"""The web app's SQLite database (flaskr style): one connection per request,
WAL mode so that the collector thread, request threads and a second app
process can read while one of them writes."""

import sqlite3
import time
from contextlib import contextmanager
from importlib import resources

import click
from flask import current_app, g
from flask.cli import with_appcontext

BUSY_TIMEOUT_S = 10


def connect(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode: transactions are explicit (`transaction`)."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def get_db() -> sqlite3.Connection:
    if "db" not in g:
        g.db = connect(current_app.config["DATABASE"])
    return g.db


def close_db(_exc=None):
    db = g.pop("db", None)
    if db is not None:
        db.close()


@contextmanager
def transaction(db: sqlite3.Connection):
    """BEGIN IMMEDIATE takes the write lock up front, so a read-then-write
    (compare-and-set) cannot interleave with another process's."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def init_db(db: sqlite3.Connection | None = None):
    """Creates the tables if missing; safe to run on an existing database."""
    db = db or get_db()
    db.executescript(resources.files("webapp").joinpath("schema.sql").read_text(encoding="utf-8"))


@click.command("init-db")
@with_appcontext
def init_db_command():
    """Create the database tables (idempotent)."""
    init_db()
    click.echo(f"Initialized the database at {current_app.config['DATABASE']}.")


def now() -> float:
    return time.time()


def init_app(app):
    app.teardown_appcontext(close_db)
    app.cli.add_command(init_db_command)

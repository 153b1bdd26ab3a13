"""The web app's database (flaskr style: one connection per request), on
SQLite by default or PostgreSQL for several app processes on several machines,
through SQLAlchemy Core; the schema is kept by Alembic (webapp/migrations/).

`DATABASE` is a file path (SQLite, WAL mode so that the collector thread,
request threads and a second app process can read while one of them writes) or
a URL (`postgresql://user:password@host/name`). Queries are written once, as
SQL with `?` placeholders, and run unchanged on both: `Database.execute` turns
each `?` into a bound parameter of the connection's dialect.

Connections are in autocommit mode; transactions are explicit (`transaction`)
and serialise every read-then-write against every other one, in all processes:
BEGIN IMMEDIATE on SQLite (the database's write lock), and on PostgreSQL a
transaction-scoped advisory lock taken first thing. Because every event is
inserted inside such a transaction, event ids are handed out in commit order on
both, which the SSE stream's "events after id N" relies on."""

from __future__ import annotations

import os
import re
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import click
import sqlalchemy as sa
from flask import current_app, g
from flask.cli import with_appcontext
from sqlalchemy.pool import NullPool
from werkzeug.routing import IntegerConverter

from webapp.files import private_file

BUSY_TIMEOUT_S = 10
# One advisory lock for all of the app's transactions (any constant; this spells "ampd").
WRITE_LOCK = 0x616D7064
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# The largest integer SQLite stores (a larger bound parameter is an OverflowError); PostgreSQL's bigint's too.
MAX_INTEGER = 2**63 - 1

_engines: dict[str, sa.Engine] = {}
_engines_lock = threading.Lock()


def database_url(database: str) -> str:
    """A SQLAlchemy URL for the DATABASE setting: a URL as it is (postgresql:// means psycopg 3), a path as SQLite."""
    if "://" not in database:
        return "sqlite:///" + os.path.abspath(database)
    scheme, rest = database.split("://", 1)
    if scheme in ("postgres", "postgresql"):
        return "postgresql+psycopg://" + rest
    return database


def redacted(database: str) -> str:
    """The DATABASE setting for a log line: without the password a URL may carry."""
    return sa.engine.make_url(database_url(database)).render_as_string(hide_password=True)


def is_sqlite(database: str) -> bool:
    return database_url(database).startswith("sqlite")


def engine(database: str) -> sa.Engine:
    """One engine (connection pool) per database per process."""
    url = database_url(database)
    with _engines_lock:
        if url not in _engines:
            _engines[url] = _make_engine(url)
        return _engines[url]


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL (None for an in-memory database)."""
    path = sa.engine.make_url(url).database
    return None if not path or path == ":memory:" or path.startswith("file:") else path


def _make_engine(url: str) -> sa.Engine:
    if url.startswith("sqlite"):
        if sqlite_path(url):  # made 0600 before SQLite opens it: its -wal and -shm files take that mode
            private_file(sqlite_path(url))
        # A connection per use, as sqlite3.connect was: opening a file is cheap, and none is held open.
        eng = sa.create_engine(
            url,
            poolclass=NullPool,
            connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False, "isolation_level": None},
        )

        @sa.event.listens_for(eng, "connect")
        def _pragmas(dbapi_connection, _record):
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            dbapi_connection.execute("PRAGMA foreign_keys=ON")
    else:
        eng = sa.create_engine(url, pool_size=8, max_overflow=24, pool_pre_ping=True, pool_recycle=3600)
    return eng.execution_options(isolation_level="AUTOCOMMIT")


def dispose(database: str) -> None:
    """Closes the pooled connections to a database (tests drop theirs afterwards)."""
    with _engines_lock:
        eng = _engines.pop(database_url(database), None)
    if eng is not None:
        eng.dispose()


@lru_cache(maxsize=1024)
def _statement(sql: str) -> tuple[sa.TextClause, int]:
    """`?` placeholders (outside quoted strings) as :p0, :p1, ... for sqlalchemy.text."""
    parts, n = [], 0
    for piece in re.split(r"('(?:[^']|'')*')", sql):
        if piece.startswith("'"):
            parts.append(piece)
            continue
        while "?" in piece:
            head, piece = piece.split("?", 1)
            parts.append(f"{head}:p{n}")
            n += 1
        parts.append(piece)
    return sa.text("".join(parts)), n


class Row:
    """A result row readable by column name or position, and as a dict (like sqlite3.Row)."""

    __slots__ = ("_row", "_mapping")

    def __init__(self, row):
        self._row, self._mapping = row, row._mapping

    def __getitem__(self, key):
        return self._row[key] if isinstance(key, int) else self._mapping[key]

    def keys(self):
        return self._mapping.keys()

    def __iter__(self):
        return iter(self._row)

    def __len__(self):
        return len(self._row)

    def __repr__(self):
        return f"Row({dict(self._mapping)!r})"


class Result:
    def __init__(self, cursor):
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> Row | None:
        row = self._cursor.fetchone()
        return None if row is None else Row(row)

    def fetchall(self) -> list[Row]:
        return [Row(r) for r in self._cursor.fetchall()] if self._cursor.returns_rows else []

    def rows(self) -> list[tuple]:
        """Plain tuples, for the few queries that return hundreds of rows."""
        return [tuple(r) for r in self._cursor.fetchall()]

    def scalar(self):
        return self._cursor.scalar()

    def __iter__(self):
        return iter(self.fetchall())


class Database:
    """One connection, with the sqlite3-like interface the app's modules use."""

    def __init__(self, connection: sa.Connection):
        self.connection = connection
        self.dialect = connection.dialect.name

    def execute(self, sql: str, params: tuple | list = ()) -> Result:
        statement, count = _statement(sql)
        if count != len(params):
            raise ValueError(f"{count} placeholders but {len(params)} parameters: {sql}")
        return Result(self.connection.execute(statement, {f"p{i}": v for i, v in enumerate(params)}))

    def close(self) -> None:
        self.connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.close()


def connect(database: str) -> Database:
    """A connection of its own (threads, streams, tools); close() gives it back."""
    return Database(engine(database).connect())


def get_db() -> Database:
    if "db" not in g:
        g.db = connect(current_app.config["DATABASE"])
    return g.db


def close_db(_exc=None):
    db = g.pop("db", None)
    if db is not None:
        db.close()


@contextmanager
def transaction(db: Database):
    """The write lock up front, so a read-then-write (compare-and-set) cannot
    interleave with another process's."""
    raw = db.connection.exec_driver_sql
    if db.dialect == "sqlite":
        raw("BEGIN IMMEDIATE")
    else:
        raw("BEGIN")
        raw(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")
    try:
        yield db
    except BaseException:
        raw("ROLLBACK")
        raise
    raw("COMMIT")


# ---------- the schema: Alembic migrations ----------


def _alembic_config():
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


@lru_cache(maxsize=1)
def head_revision() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


def current_revision(db: Database) -> str | None:
    try:
        return db.execute("SELECT version_num FROM alembic_version").scalar()
    except sa.exc.DBAPIError:  # no table yet: a new database, or one made before migrations
        return None


def init_db(db: Database | None = None) -> str:
    """Brings the schema to the newest revision, in place (a database made by
    the version before migrations included); safe to run on a current one and
    from several processes at once. Returns the revision."""
    db = db or get_db()
    head = head_revision()
    if current_revision(db) == head:
        return head
    from alembic import command

    config = _alembic_config()
    with transaction(db):  # one process migrates; the others wait, then find nothing to do
        config.attributes["connection"] = db.connection
        command.upgrade(config, "head")
    return head


@click.command("init-db")
@with_appcontext
def init_db_command():
    """Create or upgrade the database tables (idempotent)."""
    revision = init_db()
    click.echo(f"Initialized the database at {redacted(current_app.config['DATABASE'])} (schema {revision}).")


def now() -> float:
    return time.time()


class DatabaseIntConverter(IntegerConverter):
    """What <int:...> means in every route of the app: a number the database can hold. A larger one (2**63 and
    up, or a string of a thousand digits), like a negative one, matches no route and is a 404 (JSON under
    /api), where SQLite raised OverflowError on binding it (a 500)."""

    regex = r"[0-9]{1,19}"  # ASCII digits only: \d takes "１" (fullwidth) too

    def __init__(self, map, fixed_digits=0, min=None, max=None, signed=False):
        super().__init__(
            map, fixed_digits=fixed_digits, min=min, max=MAX_INTEGER if max is None else max, signed=signed
        )


def init_app(app):
    app.teardown_appcontext(close_db)
    app.cli.add_command(init_db_command)

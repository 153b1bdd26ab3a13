"""The grading workers' registry: which `amp-dojo worker` processes are alive, and what each is grading.

Each worker keeps one row of `worker_heartbeats` (migration 0007) up to date every WORKER_HEARTBEAT_SECONDS from
a background thread (WorkerBeat), in the web app's DATABASE, where every app process can read it; a clean exit
deletes the row. A worker that dies without one (killed, its machine gone) leaves its row behind: once its
`last_seen` is WORKER_DEAD_AFTER_SECONDS old it counts as dead, is listed as such on the instructors' workers
page for a day, and is then dropped by a live worker's next beat.

Readers (`/readyz`, the learner's "no grader is running" notice, the metrics) only count rows: nothing here
imports the grading code, so the web app answers these questions without PyTorch (pyproject.toml's contract)."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass

from webapp.db import connect
from webapp.i18n import noop_gettext

log = logging.getLogger("amp_dojo.workers")

FORGET_AFTER_S = 86400.0  # a dead worker's row is kept this long, for the workers page
# What a learner whose submission waits is told while no worker is alive (the API words it in their language).
NO_GRADER = noop_gettext(
    "No grader is running on this server right now: your submission waits, and it will be graded as soon as one starts."
)


@dataclass(frozen=True)
class Identity:
    """What a worker says of itself: where it runs and how it grades."""

    host: str
    pid: int
    device: str
    sandbox: str
    concurrency: int = 1

    @classmethod
    def here(cls, device: str, sandbox: str, concurrency: int = 1) -> Identity:
        return cls(socket.gethostname(), os.getpid(), device, sandbox, concurrency)


class Current:
    """The submissions this process is grading now (its consumer threads add and remove them), for the beat."""

    def __init__(self):
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    @contextmanager
    def holding(self, submission_id: str):
        with self._lock:
            self._ids.add(submission_id)
        try:
            yield
        finally:
            with self._lock:
                self._ids.discard(submission_id)

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._ids)


def dead_after(config) -> float:
    return float(config["WORKER_DEAD_AFTER_SECONDS"])


def database_now(db) -> float:
    """The database server's clock, in Unix seconds: heartbeats are written and judged by this one clock, so a
    worker machine whose clock is off is neither taken for dead nor kept alive (as leases do, docs/webapp.md)."""
    if db.dialect == "postgresql":
        return float(db.execute("SELECT extract(epoch FROM clock_timestamp())").scalar())
    return float(db.execute("SELECT (julianday('now') - 2440587.5) * 86400.0").scalar())


def beat(db, worker_id: str, me: Identity, grading: Iterable[str], now: float | None = None) -> None:
    """Inserts or refreshes the worker's row (one statement: no lock held against the app's transactions), and
    drops rows dead for more than FORGET_AFTER_S."""
    now = database_now(db) if now is None else now
    grading = " ".join(grading) or None
    db.execute(
        "INSERT INTO worker_heartbeats (id, host, pid, device, sandbox, concurrency, grading, started_at, "
        "last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET grading = excluded.grading, last_seen = excluded.last_seen",
        (worker_id, me.host, me.pid, me.device, me.sandbox, me.concurrency, grading, now, now),
    )
    db.execute("DELETE FROM worker_heartbeats WHERE last_seen < ?", (now - FORGET_AFTER_S,))


def remove(db, worker_id: str) -> None:
    db.execute("DELETE FROM worker_heartbeats WHERE id = ?", (worker_id,))


def alive(db, config, now: float | None = None) -> int:
    """How many workers sent a heartbeat within WORKER_DEAD_AFTER_SECONDS."""
    since = (database_now(db) if now is None else now) - dead_after(config)
    return db.execute("SELECT count(*) FROM worker_heartbeats WHERE last_seen >= ?", (since,)).fetchone()[0]


def listing(db, config, now: float | None = None) -> list[dict]:
    """Every worker known: the live ones first, then the dead, each most recently seen first."""
    now = database_now(db) if now is None else now
    limit = dead_after(config)
    rows = db.execute("SELECT * FROM worker_heartbeats ORDER BY last_seen DESC, id LIMIT 500").fetchall()
    workers = []
    for row in rows:
        item = {key: row[key] for key in row.keys()}
        item["alive"] = row["last_seen"] >= now - limit
        item["grading"] = (row["grading"] or "").split()
        item["silent_s"] = max(0.0, now - row["last_seen"])
        workers.append(item)
    return sorted(workers, key=lambda w: not w["alive"])  # stable: within each group, as the query ordered


def waiting(db) -> tuple[int, float | None]:
    """(submissions waiting for a grader, when the oldest of them was sent): what the queue holds, as the
    database knows it, cancelled tasks not yet taken back excluded."""
    row = db.execute("SELECT count(*), min(created_at) FROM submissions WHERE status = 'queued'").fetchone()
    return row[0], row[1]


def no_grader(db, config, row) -> bool:
    """Whether this submission waits while no worker is alive to grade it."""
    return row["status"] == "queued" and alive(db, config) == 0


def notice(db, config, row, lang: str) -> dict:
    """The submission document's fields for it: `no_grader_running`, and what to tell the learner then."""
    from webapp.i18n import gettext

    waiting = no_grader(db, config, row)
    return {"no_grader_running": waiting, "no_grader_notice": gettext(NO_GRADER, lang) if waiting else None}


class WorkerBeat(threading.Thread):
    """A worker process's heartbeat: its row written at once on entering (so the app sees it before the first
    task), then every `interval_s`; deleted on a clean exit. A database that cannot be reached is logged once
    and tried again at the next beat: grading goes on either way."""

    def __init__(self, database: str, me: Identity, interval_s: float, current: Callable[[], Iterable[str]]):
        super().__init__(name="worker-heartbeat", daemon=True)
        self.database, self.me, self.interval_s, self.current = database, me, interval_s, current
        self.worker_id = f"{me.host}:{me.pid}:{secrets.token_hex(4)}"
        self.stopped = threading.Event()
        self.failing = False

    def send(self) -> None:
        try:
            with connect(self.database) as db:
                beat(db, self.worker_id, self.me, self.current())
        except Exception as exc:  # noqa: BLE001 - a database hiccup must not stop the grading
            if not self.failing:
                log.warning("cannot record this worker's heartbeat in the database (tried again every beat): %s", exc)
            self.failing = True
        else:
            if self.failing:
                log.info("this worker's heartbeat is recorded again")
            self.failing = False

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            self.send()

    def __enter__(self) -> WorkerBeat:
        self.send()
        self.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.stopped.set()
        self.join(timeout=5)
        try:
            with connect(self.database) as db:
                remove(db, self.worker_id)
        except Exception:  # noqa: BLE001 - the row then just goes stale, and counts as dead
            log.warning("could not remove this worker's heartbeat; it will count as dead shortly")

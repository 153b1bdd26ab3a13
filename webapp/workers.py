"""The grading workers' registry: which `amp-dojo worker` processes are alive, and what each is grading.

Each worker keeps one record up to date every WORKER_HEARTBEAT_SECONDS from a background thread (WorkerBeat), in
the grading queue's own storage (QUEUE_URL): the one thing a worker on another machine already reaches, and that
every app process reads. On Redis the records are the fields of one hash, `amp-dojo:workers` (worker id -> JSON);
on SQLite (one machine) rows of Huey's `kv` table under `amp-dojo:worker:<id>`. A worker needs no DATABASE for it.
A clean exit deletes the record. A worker that dies without one (killed, its machine gone) leaves it behind: once
its `last_seen` is WORKER_DEAD_AFTER_SECONDS old it counts as dead, is listed as such on the instructors' workers
page for a day, and is then dropped by a live worker's next beat.

`last_seen` is written and judged by the queue storage's clock, never a worker machine's: Redis's TIME (one clock
for every machine), or on SQLite the clock of the one machine that holds the file. A worker whose clock is off is
thus neither taken for dead nor kept alive, and a freshly started app process judges at once (it needs to have
watched nothing change before).

Readers (`/readyz`, the learner's "no grader is running" notice, the metrics) are given the app's GradingQueue and
only read these records: nothing here imports the grading code or webapp.queue, so the web app answers these
questions without PyTorch (pyproject.toml's contract)."""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from huey.storage import RedisStorage, SqliteStorage

from webapp.i18n import noop_gettext

log = logging.getLogger("amp_dojo.workers")

FORGET_AFTER_S = 86400.0  # a dead worker's record is kept this long, for the workers page
LISTED = 500  # the most workers the page lists
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


class Records:
    """The workers' records in the queue's storage (Huey's own key-value store has no listing by prefix)."""

    def now(self) -> float:
        """The storage's clock, in Unix seconds: every record is written and judged by it."""
        raise NotImplementedError

    def put(self, worker_id: str, record: dict) -> None:
        raise NotImplementedError

    def remove(self, worker_ids: Iterable[str]) -> None:
        raise NotImplementedError

    def all(self) -> dict[str, dict]:
        raise NotImplementedError


class RedisRecords(Records):
    """One hash: a worker's beat is one HSET, a listing one HGETALL, the same from every machine."""

    HASH = "amp-dojo:workers"

    def __init__(self, storage: RedisStorage):
        self.conn = storage.conn

    def now(self) -> float:
        seconds, micros = self.conn.time()
        return seconds + micros / 1e6

    def put(self, worker_id: str, record: dict) -> None:
        self.conn.hset(self.HASH, worker_id, json.dumps(record))

    def remove(self, worker_ids: Iterable[str]) -> None:
        if worker_ids := list(worker_ids):
            self.conn.hdel(self.HASH, *worker_ids)

    def all(self) -> dict[str, dict]:
        return {_text(k): json.loads(v) for k, v in self.conn.hgetall(self.HASH).items()}


class SqliteRecords(Records):
    """Rows of Huey's `kv` table under one key prefix, read by a range of its primary key. SqliteHuey serves one
    machine: this machine's clock is the one every process reading or writing the file has."""

    PREFIX, PAST = "amp-dojo:worker:", "amp-dojo:worker;"  # ';' follows ':': every key with the prefix lies between

    def __init__(self, storage: SqliteStorage):
        self.storage = storage

    def now(self) -> float:
        return time.time()

    def put(self, worker_id: str, record: dict) -> None:
        self.storage.sql(
            "insert or replace into kv (queue, key, value) values (?, ?, ?)",
            (self.storage.name, self.PREFIX + worker_id, json.dumps(record).encode()),
            commit=True,
        )

    def remove(self, worker_ids: Iterable[str]) -> None:
        for worker_id in worker_ids:
            self.storage.sql(
                "delete from kv where queue = ? and key = ?", (self.storage.name, self.PREFIX + worker_id), commit=True
            )

    def all(self) -> dict[str, dict]:
        rows = self.storage.sql(
            "select key, value from kv where queue = ? and key >= ? and key < ?",
            (self.storage.name, self.PREFIX, self.PAST),
            results=True,
        )
        return {key[len(self.PREFIX) :]: json.loads(bytes(value)) for key, value in rows}


def records(queue) -> Records:
    """The records in this grading queue's storage (`queue`: webapp/queue.py's GradingQueue)."""
    storage = queue.huey.storage
    if isinstance(storage, RedisStorage):
        return RedisRecords(storage)
    if isinstance(storage, SqliteStorage):
        return SqliteRecords(storage)
    raise TypeError(f"no worker registry in a {type(storage).__name__}")


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def dead_after(config) -> float:
    return float(config["WORKER_DEAD_AFTER_SECONDS"])


def beat(queue, worker_id: str, me: Identity, grading: Iterable[str], now=None, started_at=None) -> float:
    """Writes the worker's record (one write: nothing locked against the gradings), drops the records dead for
    more than FORGET_AFTER_S, and returns the time it was written at (the worker's `started_at` on its first)."""
    store = records(queue)
    now = store.now() if now is None else now
    record = {**asdict(me), "grading": list(grading), "started_at": started_at or now, "last_seen": now}
    store.put(worker_id, record)
    store.remove(w for w, r in store.all().items() if r["last_seen"] < now - FORGET_AFTER_S)
    return now


def remove(queue, worker_id: str) -> None:
    records(queue).remove([worker_id])


def judged(queue, config, now: float | None = None) -> list[dict]:
    """Every worker's record, with `alive` and `silent_s` (how long since its last beat) judged at `now`."""
    store = records(queue)
    now = store.now() if now is None else now
    limit = dead_after(config)
    return [
        {
            **record,
            "id": worker_id,
            "alive": record["last_seen"] >= now - limit,
            "silent_s": max(0.0, now - record["last_seen"]),
        }
        for worker_id, record in store.all().items()
    ]


def listing(queue, config, now: float | None = None) -> list[dict]:
    """The workers known (at most LISTED): the live ones first, then the dead, each most recently seen first."""
    workers = sorted(judged(queue, config, now), key=lambda w: (not w["alive"], -w["last_seen"], w["id"]))
    return workers[:LISTED]


def alive(queue, config, now: float | None = None) -> int:
    """How many workers sent a heartbeat within WORKER_DEAD_AFTER_SECONDS."""
    return sum(1 for w in judged(queue, config, now) if w["alive"])


def waiting(db) -> tuple[int, float | None]:
    """(submissions waiting for a grader, when the oldest of them was sent): what the queue holds, as the
    database knows it, cancelled tasks not yet taken back excluded."""
    row = db.execute("SELECT count(*), min(created_at) FROM submissions WHERE status = 'queued'").fetchone()
    return row[0], row[1]


def no_grader(queue, config, row) -> bool:
    """Whether this submission waits while no worker is alive to grade it. A queue that cannot be read says
    nothing of the workers: the learner is then not told that none runs (/readyz names the queue)."""
    if row["status"] != "queued":
        return False
    try:
        return alive(queue, config) == 0
    except Exception:  # whatever stops the read (logged), no claim is made
        log.warning("cannot read the workers' heartbeats from the queue", exc_info=True)
        return False


def notice(queue, config, row, lang: str) -> dict:
    """The submission document's fields for it: `no_grader_running`, and what to tell the learner then."""
    from webapp.i18n import gettext

    waiting = no_grader(queue, config, row)
    return {"no_grader_running": waiting, "no_grader_notice": gettext(NO_GRADER, lang) if waiting else None}


class WorkerBeat(threading.Thread):
    """A worker process's heartbeat: its record written at once on entering (so the app sees it before the first
    task), then every `interval_s`; deleted on a clean exit. A queue that cannot be reached is logged once and
    tried again at the next beat (the consumer waits for it too)."""

    def __init__(self, queue, me: Identity, interval_s: float, current: Callable[[], Iterable[str]]):
        super().__init__(name="worker-heartbeat", daemon=True)
        self.queue, self.me, self.interval_s, self.current = queue, me, interval_s, current
        self.worker_id = f"{me.host}:{me.pid}:{secrets.token_hex(4)}"
        self.started_at: float | None = None
        self.stopped = threading.Event()
        self.failing = False

    def send(self) -> None:
        try:
            now = beat(self.queue, self.worker_id, self.me, self.current(), started_at=self.started_at)
        except Exception as exc:  # noqa: BLE001 - a storage hiccup must not stop the grading
            if not self.failing:
                log.warning("cannot record this worker's heartbeat in the queue (tried again every beat): %s", exc)
            self.failing = True
        else:
            self.started_at = self.started_at or now
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
            remove(self.queue, self.worker_id)
        except Exception:  # noqa: BLE001 - the record then just goes stale, and counts as dead
            log.warning("could not remove this worker's heartbeat; it will count as dead shortly")

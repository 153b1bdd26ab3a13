"""The grading queue, and the only thing the web app and grading workers share.

A Huey instance built from QUEUE_URL carries one task per grading attempt. The
worker reports back through Huey's key-value storage, under keys named by
(kind, submission id, attempt):

    claim   the worker that took this attempt (written once, put_if_empty)
    hb      heartbeat: {"beat": n, "at": ..., "worker": ...}, rewritten every few seconds
    events  the attempt's progress events so far, the whole list rewritten on each one
    result  {"status": "done", "result": {...}} or {"status": "error", "reason": ...}
    cancel  written by the web app when the learner cancels: the worker stops grading and reports nothing
    task    where the attempt's task lies in the queue (written by the web app as it enqueues): so that
            "is it still waiting?" and "take it back" (a cancelled submission leaves no task behind) each
            cost one look-up, however long the queue
    regrade a regrade's new verdict of one submission, under (submission id, regrade id) in place of the
            attempt (webapp/regrade_jobs.py); the regrade's cancel key is ("cancel", "regrade", regrade id)

so a worker on another machine needs only the Redis URL, never the web app's
database. Its own heartbeat (that a grader runs, and what it grades now) lives
here too (webapp/workers.py). The collector (webapp/collector.py) copies these
keys into the database."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

from huey import RedisHuey, SqliteHuey
from huey.storage import SqliteStorage

from webapp.files import private_file

KINDS = ("claim", "hb", "events", "result", "cancel", "task", "similarity", "regrade")
HUEY_NAME = "amp-dojo"


@dataclass(frozen=True)
class WorkerSettings:
    """What a grading worker decides for itself, whatever the task says."""

    allow_local: bool = False
    exercises: str | None = None
    name: str = ""
    limits: tuple = ()  # (name, value) pairs replacing grader.sandboxes.limits.Limits defaults
    pool_size: int = 0  # warm sandboxes kept ready per device (grader/sandboxes/pool.py); 0: a cold start per worker
    concurrency: int = 1  # gradings at once in this worker process (timing still has its device alone)

    def worker_name(self) -> str:
        return self.name or f"{socket.gethostname()}:{os.getpid()}"


def make_huey(url: str, name: str = HUEY_NAME):
    """SqliteHuey for sqlite:///path, RedisHuey for redis://host:port/db; `name` is the queue's (another name, such
    as the LMS scores' of webapp/lti, is another queue in the same storage)."""
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
        if not path:
            raise ValueError(f"QUEUE_URL {url!r}: expected sqlite:///<path to a file>")
        private_file(path)  # 0600 before Huey opens it (its -wal and -shm follow); a missing folder 0700
        return SqliteHuey(name, filename=path, results=False)
    if scheme in ("redis", "rediss", "unix"):
        return RedisHuey(name, url=url, results=False)
    raise ValueError(f"QUEUE_URL {url!r}: use sqlite:///<path> or redis://host:port/db")


def key(kind: str, submission_id: str, attempt: int) -> str:
    assert kind in KINDS
    return f"amp-dojo:{kind}:{submission_id}:{attempt}"


class GradingQueue:
    """Huey plus the key conventions above; one per process (app or worker)."""

    def __init__(self, url: str, settings: WorkerSettings | None = None):
        from webapp import grading  # the task body; imported here to keep torch out of module import
        from webapp.workers import Current

        self.url = url
        self.huey = make_huey(url)
        self.settings = settings or WorkerSettings()
        self.launchers = grading.Launchers(self.settings)
        self.current = Current()  # what this process grades now, for its heartbeat (webapp/workers.py)

        def grade(payload: dict) -> None:
            grading.grade(self, payload)

        grade.__module__ = __name__
        self.task = self.huey.task(name="grade")(grade)

        def similarity(payload: dict) -> None:
            from webapp.similarity import run_report

            self.put("similarity", payload["job"], 0, run_report(payload))

        similarity.__module__ = __name__
        # below every grading (learners wait for theirs; a report waits for a free worker), where Huey orders
        self.similarity = self.huey.task(name="similarity", priority=-10)(similarity)

        def regrade(payload: dict) -> None:
            from webapp import regrade_jobs

            regrade_jobs.step(self, payload)

        regrade.__module__ = __name__
        self.regrade_task = self.huey.task(name="regrade")(regrade)

    def enqueue_regrade(self, payload: dict) -> None:
        """A regrade's next step, behind every learner's grading: at a lower priority where the storage has
        priorities (SQLite), and at the back of the line on plain Redis (FIFO), where each step re-enqueues
        the next, so a learner's task never waits behind more than one regrade grading."""
        from webapp.regrade_jobs import PRIORITY

        priority = PRIORITY if isinstance(self.huey.storage, SqliteStorage) else None
        self.huey.enqueue(self.regrade_task.s(payload, priority=priority))

    def enqueue(self, payload: dict) -> None:
        """Puts the attempt's task at the back of the queue and notes where it lies (the `task` key)."""
        task = self.task.s(payload)
        data = self.huey.serialize_task(task)
        sid, attempt = payload["submission_id"], payload["attempt"]
        storage = self.huey.storage
        if isinstance(storage, SqliteStorage):  # the task's row id, written with the task in one transaction
            with storage.db(commit=True) as curs:
                curs.execute("insert into task (queue, data, priority) values (?, ?, 0)", (storage.name, data))
                ref = self.huey.serializer.serialize({"id": task.id, "row": curs.lastrowid})
                curs.execute(
                    "insert or replace into kv (queue, key, value) values (?, ?, ?)",
                    (storage.name, key("task", sid, attempt), ref),
                )
            return
        # Redis: LPOS and LREM find a list item by its bytes; written first, so no task is ever untracked
        self.put("task", sid, attempt, {"id": task.id, "data": data})
        storage.enqueue(data)

    def is_pending(self, submission_id: str, attempt: int) -> bool:
        """Whether the attempt's task still waits in the queue: one look-up by the `task` key, whatever the
        queue's length (Redis: one LPOS, a scan inside the server of items it compares by length first)."""
        ref = self.peek("task", submission_id, attempt)
        if not isinstance(ref, dict):  # enqueued by a version that kept no `task` key
            return self._scan_pending(submission_id, attempt)
        storage = self.huey.storage
        if isinstance(storage, SqliteStorage):
            return self._sqlite_row(storage, ref) is not None
        return storage.conn.lpos(storage.queue_key, ref["data"]) is not None

    def withdraw(self, submission_id: str, attempt: int) -> bool:
        """Takes the attempt's task back out of the queue; False if it is not there (a worker took it, or it was
        never enqueued). Atomic against a worker's dequeue: exactly one of them gets the task."""
        ref = self.peek("task", submission_id, attempt)
        if not isinstance(ref, dict):
            return False
        storage = self.huey.storage
        if isinstance(storage, SqliteStorage):
            with storage.db(commit=True) as curs:
                found = self._sqlite_row(storage, ref, curs) is not None
                if found:
                    curs.execute("delete from task where id = ?", (ref["row"],))
        else:
            found = storage.conn.lrem(storage.queue_key, 1, ref["data"]) > 0
        if found:
            self.forget(submission_id, attempt)
        return found

    def _sqlite_row(self, storage, ref: dict, curs=None):
        """The task's row, if it is still the task noted (SQLite reuses the ids of deleted rows)."""
        sql = "select data from task where id = ? and queue = ?"
        if curs is None:
            rows = storage.sql(sql, (ref["row"], storage.name), results=True)
        else:
            rows = curs.execute(sql, (ref["row"], storage.name)).fetchall()
        if rows and self.huey.serializer.deserialize(bytes(rows[0][0])).id == ref["id"]:
            return rows[0]
        return None

    def _scan_pending(self, submission_id: str, attempt: int) -> bool:
        """The queue read whole: only for tasks enqueued before the `task` key existed."""
        for task in self.huey.pending():
            payload = task.args[0] if task.args else {}
            if payload.get("submission_id") == submission_id and payload.get("attempt") == attempt:
                return True
        return False

    def pending_count(self) -> int:
        return self.huey.pending_count()

    def put(self, kind: str, submission_id: str, attempt: int, value) -> None:
        self.huey.put(key(kind, submission_id, attempt), value)

    def claim(self, submission_id: str, attempt: int, worker: str) -> bool:
        """True for the one worker that may grade this attempt."""
        return self.huey.put_if_empty(key("claim", submission_id, attempt), worker)

    def peek(self, kind: str, submission_id: str, attempt: int):
        return self.huey.get(key(kind, submission_id, attempt), peek=True)

    def forget(self, submission_id: str, attempt: int) -> None:
        """Drops an ingested attempt's keys; the claim stays, so a duplicate task is still refused."""
        for kind in ("hb", "events", "result", "cancel", "task"):
            self.huey.delete(key(kind, submission_id, attempt))

    def run_pending(self, limit: int = 100) -> int:
        """Executes queued tasks in this process, as a consumer would (tests, `--inline`)."""
        done = 0
        while done < limit and (task := self.huey.dequeue()) is not None:
            self.huey.execute(task)
            done += 1
        return done

    def close(self) -> None:
        self.launchers.close()
        self.huey.storage.close()

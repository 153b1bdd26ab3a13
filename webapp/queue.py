"""The grading queue, and the only thing the web app and grading workers share.

A Huey instance built from QUEUE_URL carries one task per grading attempt. The
worker reports back through Huey's key-value storage, under keys named by
(kind, submission id, attempt):

    claim   the worker that took this attempt (written once, put_if_empty)
    hb      heartbeat: {"beat": n, "at": ..., "worker": ...}, rewritten every few seconds
    events  the attempt's progress events so far, the whole list rewritten on each one
    result  {"status": "done", "result": {...}} or {"status": "error", "reason": ...}
    cancel  written by the web app when the learner cancels: the worker stops grading and reports nothing

so a worker on another machine needs only the Redis URL, never the web app's
database. The collector (webapp/collector.py) copies these keys into SQLite."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

from huey import RedisHuey, SqliteHuey

from webapp.files import private_file

KINDS = ("claim", "hb", "events", "result", "cancel")
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


def make_huey(url: str):
    """SqliteHuey for sqlite:///path, RedisHuey for redis://host:port/db."""
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
        if not path:
            raise ValueError(f"QUEUE_URL {url!r}: expected sqlite:///<path to a file>")
        private_file(path)  # 0600 before Huey opens it (its -wal and -shm follow); a missing folder 0700
        return SqliteHuey(HUEY_NAME, filename=path, results=False)
    if scheme in ("redis", "rediss", "unix"):
        return RedisHuey(HUEY_NAME, url=url, results=False)
    raise ValueError(f"QUEUE_URL {url!r}: use sqlite:///<path> or redis://host:port/db")


def key(kind: str, submission_id: str, attempt: int) -> str:
    assert kind in KINDS
    return f"amp-dojo:{kind}:{submission_id}:{attempt}"


class GradingQueue:
    """Huey plus the key conventions above; one per process (app or worker)."""

    def __init__(self, url: str, settings: WorkerSettings | None = None):
        from webapp import grading  # the task body; imported here to keep torch out of module import

        self.url = url
        self.huey = make_huey(url)
        self.settings = settings or WorkerSettings()
        self.launchers = grading.Launchers(self.settings)

        def grade(payload: dict) -> None:
            grading.grade(self, payload)

        grade.__module__ = __name__
        self.task = self.huey.task(name="grade")(grade)

    def enqueue(self, payload: dict) -> None:
        self.task(payload)

    def is_pending(self, submission_id: str, attempt: int) -> bool:
        """Whether the attempt's task still waits in the queue (read back from its storage)."""
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
        for kind in ("hb", "events", "result", "cancel"):
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

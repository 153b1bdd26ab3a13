"""The grading task's body, run by `amp-dojo worker` (a Huey consumer with one
thread): it grades one attempt and reports through the queue's key-value
storage only (see webapp/queue.py), so it can run on a GPU machine that shares
nothing with the web app but the queue."""

from __future__ import annotations

import logging
import math
import threading
import time
from pathlib import Path

log = logging.getLogger("amp_dojo.worker")


def json_safe(value):
    """NaN and infinity become None: browsers' JSON.parse rejects them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


class Heartbeat(threading.Thread):
    """Rewrites the attempt's heartbeat key while grading runs; when the
    process dies the key stops changing and the web app's lease runs out."""

    def __init__(self, queue, submission_id: str, attempt: int, interval_s: float, worker: str):
        super().__init__(name=f"heartbeat-{submission_id}", daemon=True)
        self.queue, self.sid, self.attempt = queue, submission_id, attempt
        self.interval_s, self.worker = interval_s, worker
        self.stopped = threading.Event()
        self.beat = 0

    def send(self):
        self.beat += 1
        try:
            self.queue.put("hb", self.sid, self.attempt, {"beat": self.beat, "at": time.time(), "worker": self.worker})
        except Exception:  # a hiccup of the queue must not end the grading; the next beat may pass
            log.exception("heartbeat for %s failed", self.sid)

    def run(self):
        while not self.stopped.wait(self.interval_s):
            self.send()

    def __enter__(self):
        self.send()
        self.start()
        return self

    def __exit__(self, *_exc):
        self.stopped.set()
        self.join(timeout=5)


class CancelWatch(threading.Thread):
    """Polls the attempt's cancel key while grading runs and sets `event` when the learner cancels: the grader
    then stops every process of this grading (grader.sandboxes.process.WorkerProcess.request), freeing the worker."""

    def __init__(self, queue, submission_id: str, attempt: int, interval_s: float = 0.25):
        super().__init__(name=f"cancel-{submission_id}", daemon=True)
        self.queue, self.sid, self.attempt, self.interval_s = queue, submission_id, attempt, interval_s
        self.event = threading.Event()
        self.stopped = threading.Event()

    def cancelled(self) -> bool:
        try:
            return self.queue.peek("cancel", self.sid, self.attempt) is not None
        except Exception:  # a hiccup of the queue must not end the grading
            log.exception("reading the cancel key of %s failed", self.sid)
            return False

    def run(self):
        while not self.stopped.wait(self.interval_s):
            if self.cancelled():
                self.event.set()
                return

    def __enter__(self):
        if self.cancelled():
            self.event.set()
        else:
            self.start()
        return self

    def __exit__(self, *_exc):
        self.stopped.set()
        if self.is_alive():
            self.join(timeout=5)


class EventLog:
    """The attempt's events, published as one list so a reader never sees a gap."""

    def __init__(self, queue, submission_id: str, attempt: int):
        self.queue, self.sid, self.attempt = queue, submission_id, attempt
        self.events: list[dict] = []
        self.checks_sent: set[tuple] = set()

    def add(self, kind: str, data: dict):
        self.events.append({"type": kind, "data": json_safe(data), "at": time.time()})
        self.queue.put("events", self.sid, self.attempt, self.events)

    def progress(self, stage: str, **info):
        """The grader's progress callback: checks become `check` events; `done`
        is announced by the web app with the result, once it has accepted it."""
        if stage == "check":
            key = (info.get("check"), info.get("status"))
            if key not in self.checks_sent:  # a repeated report of the same verdict adds nothing
                self.checks_sent.add(key)
                self.add("check", info)
        elif stage != "done":
            self.add("progress", {"stage": stage, **info})


def grade(queue, payload: dict) -> None:
    """One attempt: claim it, grade with heartbeats, publish the outcome; every line logged meanwhile names the
    submission, its lesson and attempt (webapp/logs.py)."""
    from webapp.logs import context

    with context(submission_id=payload["submission_id"], lesson=payload.get("exercise_id"), attempt=payload["attempt"]):
        _grade(queue, payload, time.perf_counter())


def _grade(queue, payload: dict, started: float) -> None:
    sid, attempt = payload["submission_id"], payload["attempt"]
    worker = queue.settings.worker_name()
    if not queue.claim(sid, attempt, worker):
        log.warning("submission %s attempt %s was already claimed; skipping a duplicate task", sid, attempt)
        return
    # The first heartbeat right after the claim: between taking the task off the queue and that beat, the
    # web app cannot tell this attempt from a lost one.
    with (
        queue.current.holding(sid),
        Heartbeat(queue, sid, attempt, payload.get("heartbeat_s", 5.0), worker),
        CancelWatch(queue, sid, attempt) as cancel,
    ):
        if cancel.event.is_set():
            outcome = None
        else:
            log.info("grading submission %s (attempt %s, lesson %s)", sid, attempt, payload["exercise_id"])
            events = EventLog(queue, sid, attempt)
            events.add("progress", {"stage": "started", "attempt": attempt, "worker": worker})
            outcome = run_grader(queue.settings, payload, events.progress, cancel.event, queue.launchers)
    if cancel.event.is_set():  # the web app already recorded the cancellation; nothing is left to report
        log.info("submission %s attempt %s: cancelled", sid, attempt)
        queue.forget(sid, attempt)
        return
    outcome.update(worker=worker, attempt=attempt, submission_id=sid)
    queue.put("result", sid, attempt, json_safe(outcome))
    log.info(
        "submission %s attempt %s: %s",
        sid,
        attempt,
        outcome.get("result", {}).get("status", outcome["status"]),
        extra={"duration_ms": round((time.perf_counter() - started) * 1000, 1)},
    )


class Launchers:
    """This process's launchers, made once per sandbox setting (probing a backend costs a process start) and,
    where the settings keep warm sandboxes, each behind its pool (grader/sandboxes/pool.py)."""

    def __init__(self, settings):
        self.settings = settings
        self._made: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def get(self, sandbox: str, allow_local: bool, device: str = "cpu"):
        from grader.sandboxes.kinds import make_launcher
        from grader.sandboxes.limits import limits_from

        with self._lock:
            key = (sandbox, allow_local)
            if key not in self._made:
                launcher = make_launcher(sandbox, limits_from(dict(self.settings.limits)), allow_local=allow_local)
                if self.settings.pool_size > 0:
                    from grader.sandboxes import exclusive
                    from grader.sandboxes.pool import WarmPool

                    launcher = WarmPool(launcher, self.settings.pool_size, devices=(device,), quiet=exclusive.sharing)
                self._made[key] = launcher
            return self._made[key]

    def close(self) -> None:
        with self._lock:
            for launcher in self._made.values():
                if hasattr(launcher, "close"):
                    launcher.close()
            self._made.clear()


def provenance(exercise_id: str, directory: Path | None) -> dict:
    """What a verdict was graded against: the lesson file's sha256 and the grader's version. Stored with the
    result, so an instructor can tell which verdicts a later change of either leaves behind (regrades)."""
    import hashlib

    import grader
    from grader.lesson.loader import exercise_file

    path = exercise_file(exercise_id, directory)
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None
    return {"lesson_hash": digest, "grader_version": grader.__version__}


def run_grader(
    settings, payload: dict, progress, cancel: threading.Event | None = None, launchers: Launchers | None = None
) -> dict:
    """A learner's failure is inside the result; only platform problems come back as `error`."""
    from grader import runner
    from grader.errors import GraderError
    from grader.lesson.loader import load_exercise

    try:
        directory = Path(settings.exercises) if settings.exercises else None
        stamp = provenance(payload["exercise_id"], directory)
        exercise = load_exercise(payload["exercise_id"], directory)
        allow_local = bool(payload.get("allow_local")) and settings.allow_local
        device = runner.resolve_device(payload.get("device", "auto"))
        launcher = (launchers or Launchers(settings)).get(payload.get("sandbox", "auto"), allow_local, device)
        result = runner.run(
            exercise, payload["code"], device=device, launcher=launcher, progress=progress, cancel=cancel
        )
        return {"status": "done", "result": result.to_dict(), **stamp}
    except GraderError as exc:
        log.error("could not grade %s: %s", payload["submission_id"], exc.message)
        return {"status": "error", "reason": f"the grader could not grade this submission: {exc.message}"}
    except Exception as exc:
        log.exception("grading %s failed", payload["submission_id"])
        return {"status": "error", "reason": f"internal error in the grading worker ({type(exc).__name__})"}

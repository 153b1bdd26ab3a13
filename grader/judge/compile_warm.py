"""Fills a lesson's trusted compile cache (grader/sandboxes/compile_cache.py) the way a learner's grading will
read it: the lesson's reference, run by the grader exactly as a submission is run (traced, under the
submission's file name, every compared step), in a trusted worker whose compiled graphs and kernels the host
keeps. The trusted reference run alone would not do: the grader's tracing is part of what dynamo sees, so a
traced submission's graphs hash to other cache entries than an untraced run's.

Then the lesson's `compile_warmups` (grader/lesson/schema.py), each the same way: the wrong steps many learners
take on the way (the model compiled, autocast not yet added), whose graphs a learner's code then loads too,
instead of spending its grading compiling them (30 s of a 35 s grading on a 2-core CPU). Each is run once per
cache, whether it compiles or fails (a failure is logged, not retried at every grading).

Done where trusted runs are computed ahead of learners (`amp-dojo warm`, the web worker's background warm) and
on a lesson's first grading on this machine, before the learner's code starts; never from a learner's code."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import threading

from grader.checks import profiling
from grader.errors import GraderError
from grader.judge.drive import ForcedOverflow, RunData, drive
from grader.judge.protocol import StepFailure
from grader.judge.workers import compile_cache_of, init_worker, spawn_worker, workload_of
from grader.lesson.schema import Exercise
from grader.sandboxes.process import WorkerFailure

log = logging.getLogger("grader.judge.compile_warm")
COMPLETE = ".complete"  # written once a reference compiled as a submission has been collected


def needed(exercise: Exercise, device: str, launcher) -> bool:
    """The lesson's code compiles (what a right answer compiles is then worth keeping) and the reference or a
    warm-up has not been run into its cache yet."""
    if not exercise.compiles:
        return False
    folder = compile_cache_of(exercise, device, launcher)
    return not all((folder / marker).exists() for marker in (COMPLETE, *map(warmup_marker, exercise.compile_warmups)))


def warmup_marker(warmup) -> str:
    """Written once a warm-up has been run into the cache (a changed warm-up is a new one)."""
    return ".warmup-" + hashlib.sha256(warmup.code.encode()).hexdigest()[:16]


def warm_compile_cache(exercise: Exercise, device: str, launcher, cancel: threading.Event | None = None) -> bool:
    """Runs the reference as a submission in a trusted worker and keeps what it compiled, then the lesson's
    warm-ups not run yet; True when the reference's is kept. A failure is logged and leaves the cache as it was
    (gradings then compile for themselves); a cancel raises.
    One process fills a lesson's cache at a time (the suite's xdist workers, two first gradings): the other waits
    and finds it filled. A background warm holding the lock gives way to a grading within a poll."""
    folder = compile_cache_of(exercise, device, launcher)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not needed(exercise, device, launcher):
            return False
        if not (folder / COMPLETE).exists():
            if not _run_as_submission(exercise, exercise.reference, device, launcher, cancel):
                return False
            folder.mkdir(parents=True, exist_ok=True)
            (folder / COMPLETE).touch()
            log.info("the compile cache of %s is filled", exercise.id)
        for warmup in exercise.compile_warmups:
            marker = folder / warmup_marker(warmup)
            if not marker.exists():
                _run_as_submission(exercise, warmup.code, device, launcher, cancel)
                marker.touch()
        return True


def _run_as_submission(exercise: Exercise, code: str, device: str, launcher, cancel) -> bool:
    worker = spawn_worker(launcher.trusted(), exercise, code, "submission.py", device, trace=True)
    worker.cancel = cancel
    try:
        init_worker(launcher, worker)
        drive(
            worker,
            workload_of(exercise, device).steps,
            trace=True,
            measure_memory=exercise.check("memory") is not None,
            data=RunData(),
            census=any(c.id in profiling.CHECK_IDS for c in exercise.checks),
            overflow=ForcedOverflow.of(exercise, device),
            survive_overflow=True,
        )
    except (StepFailure, WorkerFailure, GraderError) as exc:
        payload = getattr(exc, "payload", {})
        if payload.get("kind") == "cancelled":
            raise
        log.warning("the compile cache of %s could not be filled: %s", exercise.id, payload.get("message", exc))
        return False
    finally:
        worker.close()  # its kernels go to the lesson's trusted compile cache (Launcher.trusted)
    return True

"""Driving a submission through a lesson's phases (workload.phases, grader/lesson/phase_spec.py): each phase runs
its steps in a worker of its own; after a phase the learner's save function writes a checkpoint in that worker's
sandbox, the worker is closed, and a fresh one, which builds the workload's objects anew, runs the learner's
resume function on those files before the next phase's steps. The checkpoint passes through this process as
bytes that are never read here. The trusted runs are never split: the resumed run is judged against an
uninterrupted FP32 run (and reference), so a resume that loses any state shows as a difference."""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable

from grader.judge.drive import RunData, cut_at_overflow
from grader.judge.protocol import malformed_is_protocol, rank_replies
from grader.judge.unexercised import merge_lines
from grader.judge.workers import init_worker, workload_of
from grader.lesson.phase_spec import bounds
from grader.lesson.schema import Exercise
from grader.sandboxes.process import WorkerProcess

MAX_FILES = 64  # what a checkpoint folder may hold (grader/worker/phases.py sends at most as many)
Drive = Callable[[WorkerProcess, int, int], None]  # drive(worker, end, first): the steps first..end-1


def drive_phases(
    launcher, exercise: Exercise, device: str, worker: WorkerProcess, data: RunData, drive: Drive, fresh, kept: list
) -> WorkerProcess:
    """Runs every graded step, phase by phase; returns the worker of the last phase that ran (the caller closes
    it). `fresh()` starts a new worker for the same code: the later phases' workers are started at once, so
    they import torch while the first phase runs. `kept` gets what each worker closed here printed."""
    wl = workload_of(exercise, device)
    if not wl.phases:
        drive(worker, wl.steps, 0)
        return worker
    later = [fresh() for _ in wl.phases[1:]]
    current, files = worker, {}
    try:
        for i, (phase, (first, end)) in enumerate(zip(wl.phases, bounds(wl.phases, wl.steps))):
            if i > 0:
                current = _resumed(launcher, current, later[i - 1], phase, files, data, kept)
            drive(current, end, first)
            if cut_at_overflow(data):  # the run ended at a forced overflow: nothing after it is graded
                break
            if phase.save is not None:
                files = _saved(current, phase, data)
    except BaseException:
        if current is not worker:  # the caller closes the first one; this one is only known here
            current.close()  # first: what it printed is all read only once its pipe is closed
            kept.append(current.output())
        raise
    finally:
        for w in later:
            if w is not current:
                w.close()
    return current


def _saved(worker: WorkerProcess, phase, data: RunData) -> dict[str, str]:
    """The checkpoint the learner's save function wrote, as the files' base64 text (checked, never decoded
    beyond that)."""
    limit = 4 * worker.params_limit + 1024**2  # the model's state, an optimizer's (two moments) and the scaler's
    message = {"cmd": "save_phase", "function": phase.save.model_dump(), "phase": phase.name}
    reply = rank_replies(worker, worker.request(message, max_bytes=limit, oversized="error.oversized_params"))[0]
    data.lines_run = merge_lines(data.lines_run, reply.get("lines_run"))
    with malformed_is_protocol():
        files = reply["files"]
        if not isinstance(files, dict) or len(files) > MAX_FILES:
            raise ValueError("files")
        if not all(_safe(k) and isinstance(v, str) for k, v in files.items()):
            raise ValueError("files")
        for v in files.values():
            base64.b64decode(v, validate=True)
    return files


def _safe(rel) -> bool:
    """A relative path that stays inside the checkpoint folder."""
    if not isinstance(rel, str) or not rel or len(rel) > 255 or os.path.isabs(rel) or "\x00" in rel:
        return False
    return ".." not in rel.replace("\\", "/").split("/")


def _resumed(launcher, old: WorkerProcess, worker: WorkerProcess, phase, files, data: RunData, kept) -> WorkerProcess:
    """Closes the last phase's worker and runs the learner's resume function in the next one. The whole
    grading's budget goes on: the new worker's deadline is the old one's, the time spent loading it aside."""
    old.close()  # first: what the save function printed is all read only once the worker's pipe is closed
    kept.append(old.output())
    old.output_kept = True  # the caller, which still holds it where a later phase fails, adds it no second time
    started = time.monotonic()
    worker.cancel = old.cancel
    init_worker(launcher, worker)
    worker.loaded_at, worker.budget_s = old.loaded_at, old.budget_s
    worker.paused_s = old.paused_s + (time.monotonic() - started)
    message = {"cmd": "resume_phase", "function": phase.resume.model_dump(), "files": files}
    reply = rank_replies(worker, worker.request(message))[0]
    data.lines_run = merge_lines(data.lines_run, reply.get("lines_run"))
    return worker

"""The worker's side of a lesson in phases (workload.phases): the learner's save function writes a checkpoint
into a folder of this sandbox after a phase, and the folder's files go back to the grader as bytes it never
reads; the next phase's fresh worker gets them back into a folder of its own sandbox, and the learner's resume
function reads them before that phase's steps. Nothing survives between the two processes but those files."""

from __future__ import annotations

import base64
import os
import tempfile

from grader.worker.errors import StepError, call_failure

CHECKPOINT_DIR = "checkpoint_dir"
MAX_FILES = 64


def _function(worker, spec: dict):
    """The learner's function, its parameters checked against what this workload provides (the lesson's error
    otherwise, found before any of its code is called)."""
    available = {*worker.problem.models, *worker.problem.optimizers, *worker.problem.constants}
    available |= {*worker.grader_arguments(), *worker.prepared, CHECKPOINT_DIR}
    if unknown := [p for p in spec["params"] if p not in available]:
        raise StepError("setup", f"{spec['name']} takes {unknown[0]!r}, which this workload does not provide")
    return worker._entrypoint(worker.module, spec)


def save_phase(worker, msg: dict) -> dict:
    """Calls the learner's save function with a fresh folder, then sends the folder's regular files back."""
    spec = msg["function"]
    fn = _function(worker, spec)
    folder = tempfile.mkdtemp(prefix="checkpoint-")
    args = worker.problem.arguments(
        spec["params"], None, **{**worker.grader_arguments(), **worker.prepared, CHECKPOINT_DIR: folder}
    )
    try:
        with worker.lines_run:
            fn(*args)
    except BaseException as exc:  # noqa: BLE001 - the learner's failure is data
        err = call_failure(exc, worker.path, prepare=spec["name"])
        err.payload["phase"] = msg.get("phase", "save")
        raise err from None
    return {"files": packed(folder), "lines_run": worker.lines_run.reply()}


def packed(folder: str) -> dict[str, str]:
    """The folder's regular files by relative path, base64; links and other things are left out."""
    files = {}
    for root, _dirs, names in os.walk(folder):
        for name in sorted(names):
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path) or len(files) >= MAX_FILES:
                continue
            with open(path, "rb") as f:
                files[os.path.relpath(path, folder)] = base64.b64encode(f.read()).decode("ascii")
    return files


def unpacked(files: dict, folder: str) -> None:
    """Writes the checkpoint's files under `folder`; a path that would leave it is skipped (the judge refuses
    such a reply before it gets here)."""
    for rel, data in files.items():
        path = os.path.normpath(os.path.join(folder, rel))
        if not path.startswith(folder + os.sep):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


def resume_phase(worker, msg: dict) -> dict:
    """Writes the checkpoint into a fresh folder and runs the learner's resume function on the objects this
    process built from the workload, as `prepare` runs: what it returns replaces those objects by name."""
    spec = msg["function"]
    fn = _function(worker, spec)
    folder = tempfile.mkdtemp(prefix="checkpoint-")
    unpacked(msg.get("files") or {}, folder)
    worker.checkpoint_dir = folder
    worker._prepare(fn, {**spec, "returns": spec.get("returns") or []})
    return {"lines_run": worker.lines_run.reply()}


def current_scale(worker) -> float:
    """The scale of the GradScaler the steps use: the grader's, or the one resume (or prepare) returned in its
    place, where that is a GradScaler (a scale of another kind of object is not read)."""
    import torch

    scaler = worker.prepared.get("scaler", worker.scaler)
    if not isinstance(scaler, torch.amp.GradScaler):
        scaler = worker.scaler
    return float(scaler.get_scale())

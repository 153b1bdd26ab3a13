"""Trusted runs (the public FP32 baseline, the hidden reference) kept across
processes, restarts and machines. A trusted run depends on nothing a learner
sends: only on the lesson, the device, the PyTorch that ran it and the
grader's own code. Keyed by all of those, one stored run serves every
grading of that lesson there, so neither a restart of the web app nor a
`grader check` recomputes a baseline that exists.

Stores: a folder (the web app's instance folder, or the user's cache folder
for the CLI) or the grading queue's key-value storage (Redis: shared by every
grading machine). Both hold only what trusted processes produced; the store
itself must be writable by the grader alone (learner code runs in sandboxes
that cannot reach it)."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path

import torch

from grader.checks import profiling
from grader.errors import EnvironmentProblem, LessonCodeFailed
from grader.judge import compile_warm
from grader.judge.devices import device_model, resolve_device
from grader.judge.drive import ForcedOverflow, RunData, collect_params, drive
from grader.judge.protocol import StepFailure, _ok, code_of, malformed_is_protocol
from grader.judge.workers import init_worker, lesson_setup_error, spawn_worker, workload_of
from grader.lesson.schema import Exercise
from grader.sandboxes.process import WorkerFailure, WorkerProcess
from grader.worker import profiler_table

log = logging.getLogger("grader.judge.trusted_runs")
FIELDS = (
    "losses",
    "scales",
    "traces",
    "coverage",
    "memory",
    "params",
    "census",
    "top_ops",
    "seconds",
    "overflow",
    "overflows",
    "records",
)
# 2: a profiling lesson's given step keeps its census and torch.profiler table; 3: the run's own time; 4: the
# overflowed step inside the window, with the weights before it; 5: several overflowed steps, the lesson's records
FORMAT = 5


@lru_cache(maxsize=1)
def grader_hash() -> str:
    """All of the grader's code, not the image's part alone: how the judge drives a trusted run changes it too."""
    from grader.sandboxes.launcher import GRADER_ROOT, tree_hash

    return tree_hash(GRADER_ROOT / "grader")


def key(role: str, exercise_json: str, device: str, launcher_identity: str) -> str:

    parts = [FORMAT, role, exercise_json, device_model(device), torch.__version__, grader_hash(), launcher_identity]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def dumps(run) -> bytes:

    buffer = io.BytesIO()
    torch.save({name: getattr(run, name) for name in FIELDS}, buffer)
    return buffer.getvalue()


def loads(data: bytes, make):
    """`make(**fields)` builds the run (runner.RunData). Plain tensors and containers only (weights_only)."""

    fields = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    return make(**{name: fields[name] for name in FIELDS})


class DirectoryStore:
    """One file per run, written atomically (a reader never sees half a file)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def get(self, name: str) -> bytes | None:
        try:
            return (self.path / f"{name}.pt").read_bytes()
        except OSError:
            return None

    def put(self, name: str, data: bytes) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, self.path / f"{name}.pt")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class KeyValueStore:
    """The grading queue's storage (Huey's key-value store: SQLite or Redis), shared by its workers."""

    PREFIX = "amp-dojo:trusted:"

    def __init__(self, huey):
        self.huey = huey

    def get(self, name: str) -> bytes | None:
        return self.huey.get(self.PREFIX + name, peek=True)

    def put(self, name: str, data: bytes) -> None:
        self.huey.put(self.PREFIX + name, data)


def fetch(store, name: str, make):
    """The stored run, or None (also when it cannot be read: it is then computed again)."""
    if store is None:
        return None
    try:
        data = store.get(name)
        return loads(data, make) if data else None
    except Exception:  # noqa: BLE001 - a damaged or foreign entry is a cache miss, never a verdict
        log.warning("trusted run %s could not be read from the store; computing it again", name[:12])
        return None


def put(store, name: str, run) -> None:
    if store is None:
        return
    try:
        store.put(name, dumps(run))
    except Exception:
        log.warning("trusted run %s could not be stored", name[:12], exc_info=True)


_TRUSTED_CACHE: dict[str, RunData] = {}  # this process's trusted runs, by key

_STORE = None  # where trusted runs outlive the process (grader/judge/py); None: memory only

# The trusted runs and the lesson code each runs: a profiling lesson's given step is its starter, profiled by the
# grader in a process of its own (traced, so that its census runs there too).
TRUSTED = {"baseline": "baseline.py", "reference": "reference.py", "given": "given.py"}

TRUSTED_CODE = {"baseline": "baseline", "reference": "reference", "given": "starter"}


def spawn_trusted(launcher, exercise: Exercise, role: str, device: str) -> WorkerProcess:
    """The FP32 baseline is one process on the whole batch, whatever the lesson's ranks; the reference (and a
    profiling lesson's given step) runs as the submission does."""
    code = getattr(exercise, TRUSTED_CODE[role])
    if cached_run(launcher, exercise, role, device) is None:  # to be computed: what it compiles is kept for others
        launcher = launcher.trusted()
    return spawn_worker(
        launcher, exercise, code, TRUSTED[role], device, role == "given", ranks=1 if role == "baseline" else None
    )


def use_trusted_store(store) -> None:
    """Keeps trusted runs in `store` too (a DirectoryStore or KeyValueStore), for every grading of
    this process; None keeps them in memory only."""
    global _STORE
    _STORE = store


def _trusted_key(exercise: Exercise, role: str, device: str, launcher) -> str:
    """The sandbox is part of the key: its image may carry another PyTorch than the grader's."""
    return key(
        role,
        exercise.model_dump_json(include={"workload", TRUSTED_CODE[role], "entrypoint", "checks"}),
        device,
        launcher.identity(),
    )


def cached_run(launcher, exercise: Exercise, role: str, device: str) -> RunData | None:
    return _cached(_trusted_key(exercise, role, device, launcher))


def _cached(key: str) -> RunData | None:
    """This process's copy of a trusted run, else the store's (kept here from then on), else None."""
    if key not in _TRUSTED_CACHE and (stored := fetch(_STORE, key, RunData)) is not None:
        _TRUSTED_CACHE[key] = stored
    return _TRUSTED_CACHE.get(key)


def trusted_run(
    launcher,
    exercise: Exercise,
    role: str,
    device: str,
    worker: WorkerProcess | None = None,
    keep: bool = False,
    sizing: bool = False,
) -> RunData:
    """The public FP32 baseline or the hidden reference, each in a process of its own that never sees learner
    code, over the same steps as the submission; cached per process. `keep` leaves a given worker open (timing).
    `sizing` (grader tune) always runs, measures memory and gradient norms too, and is kept nowhere."""
    key = _trusted_key(exercise, role, device, launcher)
    if worker is None and not sizing and (cached := _cached(key)) is not None:
        return cached
    log.info("running the %s of %s on %s (%s sandbox)", role, exercise.id, device, launcher.name)
    try:
        worker = init_worker(launcher, worker or spawn_trusted(launcher, exercise, role, device))
        data = RunData()
        steps = workload_of(exercise, device).steps
        drive(
            worker,
            steps,
            trace=False,
            measure_memory=sizing or exercise.check("memory") is not None,
            data=data,
            census=role == "given",
            overflow=ForcedOverflow.of(exercise, device, role),
            grad_norms=sizing,
        )
        collect_params(worker, data)
        data.seconds = time.monotonic() - worker.loaded_at
        if role == "given" and not keep:  # one more step under torch.profiler (after timing, where it is timed)
            data.top_ops = torch_profiled(worker, steps)
    except (StepFailure, WorkerFailure) as exc:
        if exc.payload.get("kind") == "setup":
            raise lesson_setup_error(exercise, exc.payload["message"]) from None
        if exc.payload.get("kind") == "cancelled":
            raise
        what = {
            "baseline": "FP32 baseline",
            "reference": "reference solution",
            "given": "given step (the lesson's starter)",
        }[role]
        message = f"the {what} of {exercise.id!r} failed on {device}: {exc.payload['message']}"
        if exc.payload.get("kind") == "lesson":  # its workload.setup raised under the trusted code: at that line
            params = (exc.payload.get("said") or {}).get("params") or {}
            raise LessonCodeFailed(message, ("workload", "setup"), params.get("setup_line")) from None
        if exc.payload.get("kind") == "exception":  # its own code raised: the lesson's fault, at its line
            field = {"given": "starter"}.get(role, role)
            raise LessonCodeFailed(message, field, exc.payload.get("line")) from None
        raise EnvironmentProblem(f"{message}\n{exc.payload.get('traceback', '')}") from None
    finally:
        if worker is not None and not keep:
            worker.close()
    if not sizing:
        _TRUSTED_CACHE[key] = data
        put(_STORE, key, data)
    return data


def torch_profiled(worker: WorkerProcess, step: int) -> list[dict] | None:
    """torch.profiler's table of one step of a trusted worker (grader/worker/census.py). It is shown, never judged: a
    profiler that cannot run there (no access to the GPU's counters, say) leaves the table out, nothing else."""
    try:
        reply = _ok(
            worker.request({"cmd": "steps", "start": step, "count": 1, "torch_profile": True}), code=code_of(worker)
        )
        rows = reply.get("top_ops")
        with malformed_is_protocol():
            return [
                {
                    "op": str(r["op"])[:200],
                    "calls": int(r["calls"]),
                    "self_cpu_us": float(r["self_cpu_us"]),
                    "self_device_us": None if r["self_device_us"] is None else float(r["self_device_us"]),
                    "dtypes": [str(d)[:40] for d in r["dtypes"]][:3],
                }
                for r in rows[: profiler_table.TOP_OPS + 4]
            ]
    except (StepFailure, WorkerFailure) as exc:
        if exc.payload.get("kind") == "cancelled":
            raise
        return None


def trusted_roles(exercise: Exercise) -> list[str]:
    """The trusted runs a grading of `exercise` compares with: always the FP32 baseline; the reference where
    a check measures where real mixed precision ends; a profiling lesson's given step."""
    ids = {c.id for c in exercise.checks}
    return (
        ["baseline"]
        + (["reference"] if ids & {"coverage", "matmul_dtypes"} else [])
        + (["given"] if ids & set(profiling.CHECK_IDS) else [])
    )


def warm(exercise: Exercise, device: str, launcher, cancel: threading.Event | None = None) -> list[str]:
    """Makes sure the trusted runs a grading of `exercise` needs exist (in memory and in the store); returns
    the roles that had to be computed. Setting `cancel` stops the run in progress within a fraction of a second
    (it raises, kind "cancelled"); the roles finished before it are kept."""
    device = resolve_device(device)
    missing = [r for r in trusted_roles(exercise) if cached_run(launcher, exercise, r, device) is None]
    for role in missing:
        worker = spawn_trusted(launcher, exercise, role, device)
        worker.cancel = cancel
        trusted_run(launcher, exercise, role, device, worker)
    if compile_warm.needed(exercise, device, launcher) and compile_warm.warm_compile_cache(
        exercise, device, launcher, cancel
    ):
        missing.append("compile cache")
    return missing

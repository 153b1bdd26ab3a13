"""`run()`: grade one submission of one exercise. The grading process starts a
worker for the learner's code and one for the public FP32 baseline (which never
sees learner code), drives them step by step, times them itself, loads their
parameters as plain tensors and decides every check here."""

from __future__ import annotations

import binascii
import copy
import dataclasses
import io
import logging
import math
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import torch

from grader.judge import bounds, budget, static, trusted_runs
from grader.sandboxes import exclusive
from grader.wording import layers
from grader.worker import lazy_dynamo, census, workload
from grader.checks import call_order, coverage, lesson, memory, overflow, parity, profiling, ranks, speedup
from grader.errors import EnvironmentProblem, ExerciseError, GraderError
from grader.sandboxes.launcher import (LocalLauncher, SandboxDidNotStart, WorkerFailure, WorkerProcess, WorkerSpec,
                             params_reply_limit)
from grader.wording.catalog import EN, Said, say
from grader.results import ERROR, CheckResult, GradingResult, SubmissionError
from grader.lesson.schema import Exercise
from grader.judge.timing import TimingPlan, TimingResult, estimate, t999

Progress = Callable[..., None]
log = logging.getLogger("grader.runner")
lazy_dynamo.install()  # lesson setup code builds optimizers here too; nothing in this process compiles


def _noop(*_args, **_kwargs):
    pass


TRACED_STEPS = 2
# Steps 0 and 1 create gradients and optimizer state: memory is judged from step 2 on. It is profiled from step 0,
# because the CPU profiler cannot report freeing a block that was allocated while it was off.
MEMORY_FROM = 2


def resolve_device(device: str = "auto") -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EnvironmentProblem("--device cuda was asked for, but PyTorch sees no CUDA device here "
                                 f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'})")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise EnvironmentProblem(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


def amp_dtype_for(exercise: Exercise, device: str) -> str:
    amp = exercise.workload.amp
    return amp.cuda_dtype if device.startswith("cuda") else amp.cpu_dtype


@dataclass
class RunData:
    """What a worker produced over the compared steps."""

    losses: list[float] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)
    traces: list[dict] = field(default_factory=list)
    prepare_traces: list[dict] = field(default_factory=list)  # what the learner's prepare did, once (each rank)
    coverage: dict | None = None
    memory: list[dict] = field(default_factory=list)  # per measured step: peak_bytes, retained_bytes
    params: dict | None = None
    overflow: dict | None = None  # the forced-overflow step: weights before and after, scale before and after
    ranks: list["RunData"] = field(default_factory=list)  # each rank's own evidence, where the code ran as several
    census: list[dict] = field(default_factory=list)  # per step: syncs, copies, matmul dtypes (grader/worker/census.py)
    top_ops: list[dict] | None = None  # torch.profiler's busiest ops of one step (a trusted run of a given step)
    seconds: float | None = None  # a trusted run's own time, from loading its code to its parameters (budget)


def load_params(worker: WorkerProcess) -> dict:
    """Plain tensors only (weights_only): the bytes come from untrusted code. Rank 0's, where there are ranks."""
    return load_rank_params(worker)[0]


def load_rank_params(worker: WorkerProcess) -> list[dict]:
    """Every rank's parameters, each loaded here from its own reply."""
    reply = worker.request({"cmd": "save"}, max_bytes=worker.params_limit, oversized="error.oversized_params")
    return [_params(r) for r in rank_replies(worker, reply)]


def collect_params(worker: WorkerProcess, data: RunData):
    """The parameters after the compared steps: rank 0's for the run, each rank's for the ranks check."""
    params = load_rank_params(worker)
    data.params = params[0]
    for mine, theirs in zip(data.ranks, params):
        mine.params = theirs


STRICT_BASE64 = {"strict_mode": True} if sys.version_info >= (3, 11) else {}  # as b64decode(validate=True)


def _params(reply: dict) -> dict:
    """The reply's text is taken out of it and decoded straight from the str (binascii reads an ASCII str in
    place; base64.b64decode would first copy it to bytes), so one large reply is not held several times over."""
    try:
        data = binascii.a2b_base64(reply.pop("params"), **STRICT_BASE64)
        params = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception:  # noqa: BLE001 - whatever a forged reply holds
        raise WorkerFailure(protocol("error.params_unreadable")) from None
    if not isinstance(params, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                               and v.is_floating_point() for k, v in params.items()):
        raise WorkerFailure(protocol("error.params_not_tensors"))
    return {k: v.float() for k, v in params.items()}


class StepFailure(Exception):
    def __init__(self, payload: dict):
        super().__init__(payload.get("message"))
        self.payload = payload


def protocol(key: str = "error.protocol", **params) -> dict:
    said = say(key, **params)
    return {"kind": "protocol", "message": str(said), "said": said.to_dict(), "line": None}


PROTOCOL = protocol()
ERROR_KINDS = {"syntax", "import", "entrypoint", "signature", "exception", "return", "nonfinite", "oom", "exit",
               "internal", "tampering", "timeout", "crash", "protocol", "setup"}


def _ok(reply: dict, world_size: int = 1, code: str = "") -> dict:
    """A worker's reply is untrusted data: an error must look like one the worker makes, and every field of it
    is bounded (grader/judge/bounds.py) against `code`, the source the worker runs."""
    if reply.get("ok") is True:
        return reply
    error = reply.get("error")
    if not isinstance(error, dict) or error.get("kind") not in ERROR_KINDS or not isinstance(error.get("message"), str):
        raise WorkerFailure(PROTOCOL)
    rank, said = error.get("rank"), worded_error(error.get("said"))
    checked = bounds.error(error, code, MAX_EVENTS)
    if said is not None:  # the worker sends a catalog key, never words: the judge words it
        checked["message"] = str(Said.of(said))
    raise StepFailure({**checked, "said": said, "rank": rank if _is_int(rank) and 0 <= rank < world_size > 1 else None})


def code_of(worker: WorkerProcess) -> str:
    """The source a worker runs (learner code for the submission's): its lines bound what the worker reports."""
    spec = getattr(worker, "spec", None)
    return spec.code if spec is not None else ""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def rank_replies(worker: WorkerProcess, reply: dict) -> list[dict]:
    """One reply per rank (grader/worker/ranks.py), each checked like any worker's. Where one rank failed, the traces
    of the ranks that did answer go with its error: what they did differently can name the cause."""
    n, code = getattr(worker, "ranks", 1), code_of(worker)
    if n == 1:
        return [_ok(reply, code=code)]
    if reply.get("ok") is not True:
        try:
            _ok(reply, n, code)
        except StepFailure as exc:
            exc.payload["rank_traces"] = _sibling_traces(reply.get("ranks"), n, code)
            raise
    with malformed_is_protocol():
        replies = reply["ranks"]
        if not isinstance(replies, list) or len(replies) != n or not all(isinstance(r, dict) for r in replies):
            raise TypeError("ranks")
    return [_ok(r, n, code) for r in replies]


def _sibling_traces(replies, n: int, code: str) -> list[dict]:
    if not isinstance(replies, list) or len(replies) != n:
        return []
    out = []
    for rank, reply in enumerate(replies):
        if isinstance(reply, dict) and reply.get("ok") is True:
            try:
                out += [step_trace(t, rank) for t in _traces(reply.get("traces", []), code)]
                if "trace" in reply:
                    out += [prepare_trace(_traces([reply["trace"]], code)[0], rank)]
            except (KeyError, TypeError, ValueError, AttributeError):
                pass
    return out


def worded_error(said) -> dict | None:
    """The catalog key of an error a worker reports, kept only if it is one of the grader's own error messages
    with plain parameters: the web app words it in the learner's language, and nothing else."""
    if not (isinstance(said, dict) and isinstance(said.get("key"), str) and said["key"].startswith("error.")
            and said["key"] in EN and isinstance(said.get("params", {}), dict)):
        return None
    params = said.get("params", {})
    if not all(isinstance(k, str) and (isinstance(v, (int, float)) and not isinstance(v, bool)
                                       or isinstance(v, str) and len(v) <= 2000) for k, v in params.items()):
        return None
    return {"key": said["key"], "params": params}


@contextmanager
def malformed_is_protocol():
    """Reading a reply of the wrong shape is the worker's failure, whatever the validator tripped on."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
        raise WorkerFailure(PROTOCOL) from None


MAX_EVENTS = 10_000  # per traced step; a real step records a few dozen


def _floats(reply: dict, key: str, expected=None) -> list[float]:
    """Finite numbers, as many as the request asked for."""
    values = reply[key]
    if not isinstance(values, list) or (expected is not None and len(values) not in
                                        ((expected,) if isinstance(expected, int) else expected)):
        raise TypeError(key)
    out = [float(v) for v in values if not isinstance(v, (str, bool))]
    if len(out) != len(values) or not all(math.isfinite(v) for v in out):
        raise ValueError(key)
    return out


def step_trace(trace: dict, rank: int | None) -> dict:
    """A step's trace as the grader files it: which rank made it, and never the prepare phase, whatever the
    worker wrote there."""
    out = {k: v for k, v in trace.items() if k not in ("phase", "rank")}
    return out if rank is None else {**out, "rank": rank}


def prepare_trace(trace: dict, rank: int | None) -> dict:
    return {**step_trace(trace, rank), "phase": "prepare", "step": None}


def all_traces(data: RunData) -> list[dict]:
    """Every traced step of every rank, after what prepare did."""
    steps = [t for r in data.ranks for t in r.traces] if data.ranks and not data.traces else data.traces
    return data.prepare_traces + steps


def _traces(traces, code: str) -> list[dict]:
    """At most one traced step, each event rebuilt within the bounds of grader/judge/bounds.py."""
    if not isinstance(traces, list) or len(traces) > 1:
        raise TypeError("traces")
    for trace in traces:
        events = trace["events"]
        if not isinstance(events, list) or len(events) > MAX_EVENTS or not all(
                isinstance(e, dict) and isinstance(e.get("ev"), str) for e in events):
            raise TypeError("events")
    return [bounds.trace(t, code) for t in traces]


def _coverage(coverage):
    """{"flops": {dtype: n}, "by_module": {name: {dtype: n}}} with non-negative numbers, or None."""
    if coverage is None:
        return None
    counts = [coverage["flops"], *coverage["by_module"].values()]
    for by_dtype in counts:
        if not isinstance(by_dtype, dict) or not all(
                isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e30
                for k, v in by_dtype.items()):
            raise TypeError("coverage")
    return coverage


def _merge_coverage(total: dict | None, new: dict | None) -> dict | None:
    if new is None:
        return total
    if total is None:
        return new
    for dtype, flops in new["flops"].items():
        total["flops"][dtype] = total["flops"].get(dtype, 0) + flops
    for mod, by_dtype in new["by_module"].items():
        slot = total["by_module"].setdefault(mod, {})
        for dtype, flops in by_dtype.items():
            slot[dtype] = slot.get(dtype, 0) + flops
    return total


def _memory(steps) -> list[dict]:
    if not isinstance(steps, list) or len(steps) != 1:
        raise TypeError("memory")
    out = []
    for m in steps:
        peak, kept = m["peak_bytes"], m["retained_bytes"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**50 for v in (peak, kept)):
            raise TypeError("memory")
        out.append({"peak_bytes": peak, "retained_bytes": kept})
    return out


_CENSUS_FIELDS = {"sync": ("kind", "op"), "copy": ("dir", "op"), "matmul": ("op", "dtype", "module", "autocast")}


def _census(steps) -> list[dict]:
    """One step's census events (grader/worker/census.py), rebuilt field by field: known kinds, short strings, counts."""
    if not isinstance(steps, list) or len(steps) != 1:
        raise TypeError("census")
    out = []
    for s in steps:
        events = s["events"]
        if not isinstance(events, list) or len(events) > census.MAX_EVENTS:
            raise TypeError("census")
        clean = []
        for e in events:
            names = _CENSUS_FIELDS[e["ev"]]
            if not all(isinstance(e[k], str) and len(e[k]) <= 200 for k in names):
                raise TypeError("census")
            line, n, nbytes = e["line"], e["n"], e.get("bytes", 0)
            if not (line is None or _count(line)) or not _count(n) or not _count(nbytes):
                raise TypeError("census")
            clean.append({"ev": e["ev"], **{k: e[k] for k in names}, "line": line, "n": n,
                          **({"bytes": nbytes} if e["ev"] == "copy" else {})})
        out.append({"step": s["step"] if _count(s["step"]) else None, "events": clean})
    return out


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**50


@dataclass(frozen=True)
class ForcedOverflow:
    """The graded step whose gradients the grader makes overflow in a run: `how` is "overflow" (every gradient
    gets an inf, as a float16 backward that overflows would give: the runs with a GradScaler) or "skip" (the
    FP32 baseline, which has no scaler: it runs the step and is put back as a skipped step leaves it)."""

    step: int
    how: str = "overflow"

    @classmethod
    def of(cls, exercise: Exercise, device: str, role: str = "submission") -> "ForcedOverflow | None":
        spec = exercise.check("overflow")
        if spec is None:
            return None
        return cls(spec.step(workload_of(exercise, device).steps), "skip" if role == "baseline" else "overflow")


RAISED = ("exception",)  # what a step that raised on the forced overflow ends as (not a timeout, not memory)


def drive(worker: WorkerProcess, steps: int, *, trace: bool, measure_memory: bool, data: RunData,
          progress: Callable[[int], None] = _noop, census: bool = False, overflow: ForcedOverflow | None = None,
          survive_overflow: bool = False):
    """Runs the compared steps one request at a time, collecting evidence. Where the code runs as several ranks,
    each rank's evidence is kept (data.ranks) and the whole run's is made of theirs here: the step's loss is the
    mean of the ranks' losses (each over its share of the batch), the trace holds every rank's calls, and the
    scale and parameters are rank 0's (the ranks check compares the others with it). The step of `overflow` is
    traced too, with the weights loaded before and after it; with `survive_overflow`, an exception raised on
    that step ends the run there as evidence (data.overflow["error"]) instead of as the run's error."""
    n = getattr(worker, "ranks", 1)
    if n > 1 and not data.ranks:
        data.ranks = [RunData() for _ in range(n)]
    for step in range(steps):
        progress(step)
        forced = overflow is not None and step == overflow.step
        traced = trace and (step < TRACED_STEPS or forced)
        msg = {"cmd": "steps", "start": step, "count": 1, "trace": traced, "coverage": trace and step < TRACED_STEPS,
               "memory": measure_memory, "profile": census}
        before = None
        if forced:
            msg[overflow.how] = True
            before = load_rank_params(worker)
        try:
            replies = rank_replies(worker, worker.request(msg))
        except StepFailure as exc:
            if not (forced and survive_overflow and exc.payload.get("kind") in RAISED):
                raise
            _overflow_raised(data, step, before, exc.payload)
            break
        with malformed_is_protocol():
            for rank, (reply, mine) in enumerate(zip(replies, data.ranks or [data])):
                mine.losses += _losses(reply, forced)
                mine.scales += _floats(reply, "scales", expected=(0, 1))
                mine.traces += [{**step_trace(t, rank if n > 1 else None), **({"overflow": True} if forced else {})}
                                for t in _traces(reply.get("traces", []), code_of(worker))]
                mine.coverage = _merge_coverage(mine.coverage, _coverage(reply.get("coverage")))
                if "memory" in reply and step >= MEMORY_FROM:
                    mine.memory += _memory(reply["memory"])
                if census:
                    mine.census += _census(reply.get("census"))
        if forced and _overflow_seen(worker, data, step, before):
            break  # the weights took the inf: what follows would be the grader's doing, not the learner's
    if n > 1:
        _combine_ranks(data)


def _combine_ranks(data: RunData):
    ranks = data.ranks
    data.losses = [sum(values) / len(values) for values in zip(*(r.losses for r in ranks))]
    data.scales = list(ranks[0].scales)
    data.census = list(ranks[0].census)
    data.traces = [t for r in ranks for t in r.traces]
    data.coverage = None
    for r in ranks:  # copies: merging adds into the first one, which stays that rank's own evidence
        data.coverage = _merge_coverage(data.coverage, copy.deepcopy(r.coverage))


def _losses(reply: dict, forced: bool) -> list[float]:
    """The step's loss; on the overflowed step it may be missing (None: a term made of the overflowed
    gradients, such as a gradient penalty, is inf there in the reference too) and is then NaN here."""
    if forced and isinstance(reply.get("losses"), list) and reply["losses"] == [None]:
        return [math.nan]
    return _floats(reply, "losses", expected=1)


def _overflow_seen(worker: WorkerProcess, data: RunData, step: int, before: list[dict]) -> bool:
    """Keeps each rank's weights and scale just before and just after the overflowed step. Where that step
    changed weights (it applied the inf gradients), the run is cut there: it is judged as the window of the steps
    before it, and the overflow check names the mistake. Returns whether it was cut."""
    after = load_rank_params(worker)
    runs = data.ranks or [data]
    applied = any(overflow.changed(was, now) for was, now in zip(before, after))
    for mine, was, now in zip(runs, before, after):
        mine.overflow = {"step": step, "before": was, "after": now, "error": None, "applied": applied,
                         "scale_before": mine.scales[-2] if len(mine.scales) > 1 else None,
                         "scale_after": mine.scales[-1] if mine.scales else None}
        if applied:
            del mine.losses[step:], mine.scales[step:]
            mine.memory = mine.memory[:max(0, step - MEMORY_FROM)]
            mine.params = was
    if data.ranks:
        data.overflow = data.ranks[0].overflow
        if applied:
            data.params = data.ranks[0].params
    return applied


def _overflow_raised(data: RunData, step: int, before: list[dict], payload: dict):
    """The code raised on the step the grader made overflow: the run stops there, and what it did until then
    (the weights before that step, the calls it made on it) is judged as a window of `step` steps."""
    payload = {k: v for k, v in payload.items() if k != "rank_traces"}
    partial = partial_trace(payload)
    for rank, (mine, was) in enumerate(zip(data.ranks or [data], before)):
        mine.overflow = {"step": step, "before": was, "after": None, "error": payload,
                         "scale_before": mine.scales[-1] if mine.scales else None, "scale_after": None}
        mine.params = was
        if not data.ranks or payload.get("rank") == rank:
            mine.traces += [{**t, "overflow": True} for t in partial]
    if data.ranks:
        data.overflow = data.ranks[0].overflow
        data.params = data.ranks[0].params


_TRUSTED_CACHE: dict[str, RunData] = {}  # this process's trusted runs, by trusted_runs.key
_STORE = None  # where trusted runs outlive the process (grader/judge/trusted_runs.py); None: memory only
NEAR_FP32 = 0.05  # where a lesson has no parity check: how close to the FP32 run a forged run would end
# The trusted runs and the lesson code each runs: a profiling lesson's given step is its starter, profiled by the
# grader in a process of its own (traced, so that its census runs there too).
TRUSTED = {"baseline": "baseline.py", "reference": "reference.py", "given": "given.py"}
TRUSTED_CODE = {"baseline": "baseline", "reference": "reference", "given": "starter"}


def spawn_trusted(launcher, exercise: Exercise, role: str, device: str) -> WorkerProcess:
    """The FP32 baseline is one process on the whole batch, whatever the lesson's ranks; the reference (and a
    profiling lesson's given step) runs as the submission does."""
    code = getattr(exercise, TRUSTED_CODE[role])
    return spawn_worker(launcher, exercise, code, TRUSTED[role], device, role == "given",
                        ranks=1 if role == "baseline" else None)


def use_trusted_store(store) -> None:
    """Keeps trusted runs in `store` too (a trusted_runs.DirectoryStore or KeyValueStore), for every grading of
    this process; None keeps them in memory only."""
    global _STORE
    _STORE = store


def _trusted_key(exercise: Exercise, role: str, device: str, launcher) -> str:
    """The sandbox is part of the key: its image may carry another PyTorch than the grader's."""
    return trusted_runs.key(role, exercise.model_dump_json(
        include={"workload", TRUSTED_CODE[role], "entrypoint", "checks"}), device, launcher.identity())


def spawn_worker(launcher, exercise: Exercise, code: str, filename: str, device: str, trace: bool,
                 ranks: int | None = None) -> WorkerProcess:
    """Starts the process (it imports torch while the grader does other work); `init_worker` waits for it."""
    kind = "cuda" if device.startswith("cuda") else "cpu"
    ranks = ranks or exercise.workload.ranks
    try:
        worker = launcher.start(WorkerSpec(code, filename, exercise.public(kind), device, trace=trace, ranks=ranks))
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnvironmentProblem(f"the {launcher.name} sandbox could not start a worker: {exc}") from None
    worker.ranks = ranks
    worker.params_limit = params_reply_limit(starting_point(exercise, device).state, ranks)
    return worker


def init_worker(launcher, worker: WorkerProcess) -> WorkerProcess:
    """Waits for the worker to load the code (and run the learner's prepare); what prepare did is kept as
    `worker.prepare_traces`, one per rank."""
    try:
        worker.wait_ready()
    except SandboxDidNotStart as exc:
        worker.close()
        raise EnvironmentProblem(f"the {launcher.name} sandbox did not start a worker: {exc}") from None
    try:
        replies = rank_replies(worker, worker.request(worker.init_message(), timeout=launcher.limits.init_timeout_s))
        with malformed_is_protocol():
            worker.prepare_traces = [prepare_trace(_traces([r["trace"]], code_of(worker))[0],
                                                   i if len(replies) > 1 else None)
                                     for i, r in enumerate(replies) if "trace" in r]
    except StepFailure as exc:
        exc.payload["output"] = worker.output()  # what the code printed before failing belongs in the result
        worker.close()
        raise
    except BaseException:
        worker.close()
        raise
    return worker


def cached_run(launcher, exercise: Exercise, role: str, device: str) -> RunData | None:
    key = _trusted_key(exercise, role, device, launcher)
    if key not in _TRUSTED_CACHE and (stored := trusted_runs.fetch(_STORE, key, RunData)) is not None:
        _TRUSTED_CACHE[key] = stored
    return _TRUSTED_CACHE.get(key)


def trusted_run(launcher, exercise: Exercise, role: str, device: str, worker: WorkerProcess | None = None,
                keep: bool = False) -> RunData:
    """The public FP32 baseline or the hidden reference, each in a process of its own that never sees learner
    code, over the same steps as the submission; cached per process. `keep` leaves a given worker open (timing)."""
    key = _trusted_key(exercise, role, device, launcher)
    if worker is None and (cached := cached_run(launcher, exercise, role, device)) is not None:
        return cached
    log.info("running the %s of %s on %s (%s sandbox)", role, exercise.id, device, launcher.name)
    try:
        worker = init_worker(launcher, worker or spawn_trusted(launcher, exercise, role, device))
        data = RunData()
        steps = workload_of(exercise, device).steps
        drive(worker, steps, trace=False, measure_memory=exercise.check("memory") is not None, data=data,
              census=role == "given", overflow=ForcedOverflow.of(exercise, device, role))
        collect_params(worker, data)
        data.seconds = time.monotonic() - worker.loaded_at
        if role == "given" and not keep:  # one more step under torch.profiler (after timing, where it is timed)
            data.top_ops = torch_profiled(worker, steps)
    except (StepFailure, WorkerFailure) as exc:
        if exc.payload.get("kind") == "setup":
            raise lesson_setup_error(exercise, exc.payload["message"]) from None
        if exc.payload.get("kind") == "cancelled":
            raise
        what = {"baseline": "FP32 baseline", "reference": "reference solution",
                "given": "given step (the lesson's starter)"}[role]
        raise EnvironmentProblem(f"the {what} of {exercise.id!r} failed on {device}: {exc.payload['message']}"
                                 f"\n{exc.payload.get('traceback', '')}") from None
    finally:
        if worker is not None and not keep:
            worker.close()
    _TRUSTED_CACHE[key] = data
    trusted_runs.keep(_STORE, key, data)
    return data


def torch_profiled(worker: WorkerProcess, step: int) -> list[dict] | None:
    """torch.profiler's table of one step of a trusted worker (grader/worker/census.py). It is shown, never judged: a
    profiler that cannot run there (no access to the GPU's counters, say) leaves the table out, nothing else."""
    try:
        reply = _ok(worker.request({"cmd": "steps", "start": step, "count": 1, "torch_profile": True}),
                    code=code_of(worker))
        rows = reply.get("top_ops")
        with malformed_is_protocol():
            return [{"op": str(r["op"])[:200], "calls": int(r["calls"]), "self_cpu_us": float(r["self_cpu_us"]),
                     "self_device_us": None if r["self_device_us"] is None else float(r["self_device_us"]),
                     "dtypes": [str(d)[:40] for d in r["dtypes"]][:3]} for r in rows[:census.TOP_OPS + 4]]
    except (StepFailure, WorkerFailure) as exc:
        if exc.payload.get("kind") == "cancelled":
            raise
        return None


def trusted_roles(exercise: Exercise) -> list[str]:
    """The trusted runs a grading of `exercise` compares with: always the FP32 baseline; the reference where
    a check measures where real mixed precision ends; a profiling lesson's given step."""
    ids = {c.id for c in exercise.checks}
    return ["baseline"] + (["reference"] if ids & {"coverage", "matmul_dtypes"} else []) + (
        ["given"] if ids & set(profiling.CHECK_IDS) else [])


def warm(exercise: Exercise, device: str, launcher) -> list[str]:
    """Makes sure the trusted runs a grading of `exercise` needs exist (in memory and in the store); returns
    the roles that had to be computed."""
    device = resolve_device(device)
    missing = [r for r in trusted_roles(exercise) if cached_run(launcher, exercise, r, device) is None]
    for role in missing:
        trusted_run(launcher, exercise, role, device)
    return missing


def lesson_setup_error(exercise: Exercise, message: str) -> ExerciseError:
    return ExerciseError(f"lesson {exercise.id!r}: {message} (this is the lesson's fault, not the submission's; "
                         "run `grader validate` on it)")


@dataclass
class Start:
    """Where every run starts, rebuilt here from the seed: the weights, and the model's layers by name."""

    state: dict
    layers: dict


_START_CACHE: dict[str, Start] = {}


def starting_point(exercise: Exercise, device: str) -> Start:
    """Built in the grading process; a lesson whose setup code fails stops the grading as the lesson's error
    before any learner code runs."""
    wl = workload_of(exercise, device)
    key = wl.model_dump_json()
    if key not in _START_CACHE:
        try:
            problem = workload.build_problem(wl.model_dump(), optimizers=False)
        except workload.SetupError as exc:
            raise lesson_setup_error(exercise, exc.message) from None
        if unprovided := problem.unprovided_by(exercise.entrypoint.model_dump()):
            raise lesson_setup_error(exercise, unprovided)
        _START_CACHE[key] = Start(problem.state(), layers.describe(problem.root))
    return _START_CACHE[key]


def workload_of(exercise: Exercise, device: str):
    return exercise.workload.for_device("cuda" if device.startswith("cuda") else "cpu")


def time_interleaved(base: WorkerProcess, sub: WorkerProcess, first_step: int, plan: TimingPlan,
                     progress: Progress) -> TimingResult:
    """Warm-up, then rounds of one block each, order alternating, the idle worker frozen."""

    def timed(worker, other, start, count, losses=None):
        other.freeze()
        try:
            t0 = time.perf_counter()
            reply = _ok(worker.request({"cmd": "steps", "start": start, "count": count}), code=code_of(worker))
            elapsed = time.perf_counter() - t0
        finally:
            other.thaw()
        if losses is not None:
            with malformed_is_protocol():
                losses += _floats(reply, "losses", expected=count)
        return elapsed

    step = first_step
    warm = [timed(base, sub, step, plan.warmup_steps), timed(sub, base, step, plan.warmup_steps)]
    step += plan.warmup_steps
    k = plan.block_steps(min(warm) / plan.warmup_steps)
    result = TimingResult(steps_per_block=k)
    started = time.perf_counter()
    while True:
        order = [(base, sub), (sub, base)] if len(result.baseline_s) % 2 == 0 else [(sub, base), (base, sub)]
        for worker, other in order:
            role = "baseline" if worker is base else "submission"
            elapsed = timed(worker, other, step, k, result.losses[role])
            (result.baseline_s if worker is base else result.submission_s).append(elapsed)
        step += k
        result.estimate = estimate(result.baseline_s, result.submission_s)
        result.elapsed_s = time.perf_counter() - started
        progress("timing", rounds=result.estimate.rounds, speedup=result.estimate.ratio)
        if plan.done(result.estimate, result.elapsed_s, estimate(result.baseline_s, result.submission_s, t999)):
            result.next_step = step
            return result


@contextmanager
def budget_paused(worker: WorkerProcess):
    """The grading waits for something that is not the learner's (the device, held by another grading's timed
    rounds; a trusted run still going): that wait is not taken from the learner's budget."""
    started = time.monotonic()
    try:
        yield
    finally:
        worker.extend_budget(time.monotonic() - started)


def step_limit(worker: WorkerProcess, limits) -> float:
    """The longest the next step may take: its own limit, or what is left of the grading's budget."""
    if worker.deadline is None:
        return limits.step_timeout_s
    return max(0.0, min(limits.step_timeout_s, round(worker.deadline - time.monotonic(), 1)))


def budget_when_known(worker: WorkerProcess, futures: dict, limits, exercise: Exercise, timed_s: list[float]):
    """Sets the submission's whole-grading budget (grader/judge/budget.py) once every trusted run it is measured against
    has its time: at once where they were stored, else when the last one finishes."""

    def finished(_future):
        if all(f.done() for f in futures.values()):  # the last one's callback (or two at once: the same value)
            runs = {r: f.result() for r, f in futures.items() if f.exception() is None}
            worker.set_budget(budget.derived(limits, {r: d.seconds for r, d in runs.items()}, timed_s,
                                             exercise.workload.grading_budget_s))

    if not futures:
        worker.set_budget(exercise.workload.grading_budget_s)
    for future in futures.values():
        future.add_done_callback(finished)


def submission_error(payload: dict) -> SubmissionError:
    """The error as the learner reads it: the grader's own wording where it has one (a raised exception's text
    is PyTorch's or the learner's, and stays as it is), with the line in front and, with ranks, the rank before
    that."""
    said = Said.of(payload["said"]) if payload.get("said") else say("error.raised", detail=payload.get(
        "message", "unknown error"))
    line = payload.get("line")
    if line and payload.get("kind") not in ("timeout",):
        said = say("error.at_line", line=line, message=said)
    if payload.get("rank") is not None:  # `rank 1: line 23: ...`, as docs/authoring.md shows it: whose, then where
        said = say("error.on_rank", rank=payload["rank"], message=said)
    return SubmissionError(payload.get("kind", "error"), said, line, payload.get("source_line"), payload.get("step"))


def run(exercise: Exercise, source: str, *, device: str = "auto", launcher=None, progress: Progress | None = None,
        timing_plan: TimingPlan | None = None, cancel: threading.Event | None = None) -> GradingResult:
    """Grades `source`; a learner's failure is data in the result, never an exception. Setting `cancel` stops
    every process of this grading within a fraction of a second; the result then says it was cancelled."""
    started = time.perf_counter()
    progress = progress or _noop
    launcher = launcher or LocalLauncher()
    device = resolve_device(device)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    result = GradingResult(exercise.id, device, amp_dtype_for(exercise, device), sandbox=launcher.name)
    progress("static")
    syntax = static.syntax_error(source)
    if syntax:
        message, line, text = syntax
        result.error = SubmissionError("syntax", say("error.at_line", line=line, message=say("error.raised",
                                                                                           detail=message)), line, text)
        return _finish(result, exercise, started, progress)
    static_findings = static.analyse(source)
    if exercise.check("host_syncs") is None:  # graded by host_syncs where the lesson has it, a note elsewhere
        static_findings += static.cuda_only_host_syncs(source, exercise.entrypoint.name, note=True)
    start = starting_point(exercise, device)
    speed_spec = exercise.check("speedup")
    needs_timing = speed_spec is not None and kind in speed_spec.min_speedup
    given_spec = exercise.check("step_time")  # a profiling lesson: the fixed step timed against the given one
    times_given = given_spec is not None and kind in given_spec.min_speedup
    profiled = any(c.id in profiling.CHECK_IDS for c in exercise.checks)
    wl = workload_of(exercise, device)
    sub_data, traces, base_worker, sub_worker, timing, futures = RunData(), [], None, None, None, {}
    cut = False  # the submission's run ended at the overflowed step (runner.cut_at_overflow)
    given_worker, given_timing = None, None
    spawned: list[WorkerProcess] = []
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trusted-runs")
    hold = exclusive.Hold(device)
    # Other gradings may use the device meanwhile, except where this one measures what they would disturb:
    # CUDA memory peaks, and (below) the timed rounds.
    alone_throughout = kind == "cuda" and exercise.check("memory") is not None
    try:
        hold.alone() if alone_throughout else hold.share()
        progress("baseline")
        # Every process starts before any is waited for, so they import torch side by side; the trusted runs
        # are then driven on a thread while the submission is driven here (they are separate processes).
        roles = trusted_roles(exercise)
        pending = {r: spawn_trusted(launcher, exercise, r, device) for r in roles
                   if (r == "baseline" and needs_timing) or (r == "given" and times_given)
                   or cached_run(launcher, exercise, r, device) is None}
        spawned += pending.values()
        sub_worker = spawn_worker(launcher, exercise, source, "submission.py", device, trace=True)
        for w in (*spawned, sub_worker):
            w.cancel = cancel
        base_worker = pending.get("baseline") if needs_timing else None
        given_worker = pending.get("given") if times_given else None
        futures = {role: pool.submit(trusted_run, launcher, exercise, role, device, pending.get(role),
                                     keep=pending.get(role) is not None and pending.get(role) in (base_worker,
                                                                                                 given_worker))
                   for role in roles}
        budget_when_known(sub_worker, futures, launcher.limits, exercise, [
            (timing_plan.budget_s if timing_plan else spec.budget_s) for spec, timed in
            ((speed_spec, needs_timing), (given_spec, times_given)) if timed])
        progress("starting", limit_s=launcher.limits.init_timeout_s)
        init_worker(launcher, sub_worker)
        sub_data.prepare_traces = sub_worker.prepare_traces
        progress("steps", total=wl.steps)
        drive(sub_worker, wl.steps, trace=True, measure_memory=exercise.check("memory") is not None, data=sub_data,
              progress=lambda step: progress("step", n=step + 1, total=wl.steps,
                                             limit_s=step_limit(sub_worker, launcher.limits)), census=profiled,
              overflow=ForcedOverflow.of(exercise, device), survive_overflow=True)
        cut = cut_at_overflow(sub_data)
        if not cut:
            collect_params(sub_worker, sub_data)
        if not all(future.done() for future in futures.values()):
            progress("trusted")  # the FP32 baseline and the reference run are still going
        with budget_paused(sub_worker):
            for future in futures.values():
                future.result()  # the baseline's worker is free for timing only once its run is over
        if needs_timing and not cut:
            progress("timing", rounds=0)
            with budget_paused(sub_worker):
                hold.alone()
            plan = timing_plan or TimingPlan(budget_s=speed_spec.budget_s, threshold=speed_spec.min_speedup[kind])
            timing = time_interleaved(base_worker, sub_worker, wl.steps, plan, progress)
            with budget_paused(sub_worker):
                hold.alone() if alone_throughout else hold.share()
            timing.after_params = (load_params(sub_worker), load_params(base_worker))
        if times_given and not cut:
            progress("timing_given", rounds=0)
            with budget_paused(sub_worker):
                hold.alone()
            plan = timing_plan or TimingPlan(budget_s=given_spec.budget_s, threshold=given_spec.min_speedup[kind])
            given_timing = time_interleaved(given_worker, sub_worker, wl.steps, plan,
                                            lambda stage, **kw: progress("timing_given", **kw))
            with budget_paused(sub_worker):
                hold.alone() if alone_throughout else hold.share()
            given_timing.after_params = (load_params(sub_worker), load_params(given_worker))
            futures["given"].result().top_ops = torch_profiled(given_worker, given_timing.next_step)
    except (StepFailure, WorkerFailure) as exc:
        if exc.payload.get("kind") == "setup":  # raised before the learner's module was loaded
            raise lesson_setup_error(exercise, exc.payload["message"]) from None
        # Even an "internal" error is only what the worker says, and learner code shares its process: it
        # is reported in the result, never raised as a fault of the platform.
        result.error = submission_error(exc.payload)
        traces = all_traces(sub_data) + exc.payload.get("rank_traces", []) + partial_trace(exc.payload)
    finally:
        pool.shutdown(wait=True)  # a trusted run still going finishes (and is cached) before its worker closes
        hold.release()
        for w in (sub_worker, base_worker, *spawned):
            if w is not None:
                result.output += w.output() if w is sub_worker else ""
                w.close()
    if result.error is not None and result.error.kind == "cancelled":
        return _finish(result, exercise, started, progress)
    trusted = {role: future.result() for role, future in futures.items()}  # a failed baseline is the platform's
    base, ref, given = trusted.get("baseline"), trusted.get("reference"), trusted.get("given")
    if result.error is None:
        if cut:  # judged as the window of steps before the overflowed one, the trusted runs' too
            base, ref = (window(r, sub_data.overflow["step"]) if r is not None else None for r in (base, ref))
        evidence = Evidence(base, ref, start.state, start.layers, given, source, given_timing)
        result.checks = judged(lambda: evaluate(exercise, kind, result.amp_dtype, static_findings, sub_data,
                                                evidence, timing), result, exercise)
        result.plots = plots(sub_data, base, timing) if result.error is None else {}
        if given is not None and result.error is None:
            result.plots["profile"] = profiling.plot(sub_data.census, given.census, given.top_ops, kind)
    if result.error is not None:
        result.checks = judged(lambda: error_checks(exercise, kind, result, traces, static_findings), result,
                               exercise)
    for c in result.checks:
        progress("check", check=c.id, status=c.status)
    result.notes = [f for c in result.checks for f in c.findings if f.severity == "info"]
    return _finish(result, exercise, started, progress)


def raised_on_overflow(data: RunData) -> dict | None:
    """The error the code raised on the step the grader made overflow, if it did."""
    return data.overflow.get("error") if data.overflow else None


def cut_at_overflow(data: RunData) -> bool:
    """Whether the run ended at the overflowed step: it raised there, or applied the inf to the weights."""
    return bool(data.overflow and (data.overflow.get("error") or data.overflow.get("applied")))


def window(data: RunData, steps: int) -> RunData:
    """A trusted run as it stood before step `steps` (the overflowed step, which it ran through): what a
    submission whose run ended on that step (it raised, or applied the inf) is compared with."""
    o = data.overflow
    return dataclasses.replace(data, losses=data.losses[:steps], scales=data.scales[:steps],
                               memory=data.memory[:max(0, steps - MEMORY_FROM)], params=o["before"],
                               ranks=[window(r, steps) for r in data.ranks])


def partial_trace(payload: dict) -> list[dict]:
    """The calls a failed request made before it failed (of the rank that failed), as a trace."""
    if not payload.get("events"):
        return []
    trace = {"step": payload.get("step"), "events": payload["events"], "param_dtypes": [], "partial": True}
    if payload.get("rank") is not None:
        trace["rank"] = payload["rank"]
    if payload.get("phase") == "prepare":
        trace.update(phase="prepare", step=None)
    return [trace]


def judged(decide, result: GradingResult, exercise: Exercise) -> list[CheckResult]:
    """The evidence came from an untrusted process: if deciding on it fails, that is the submission's
    error, not an exception out of run()."""
    try:
        return decide()
    except GraderError:
        raise  # the lesson's own check code failed: the lesson's error, not the submission's
    except Exception as exc:  # noqa: BLE001
        result.error = submission_error(protocol("error.protocol_detail", detail=type(exc).__name__))
        reason = Said.of(result.error.parts[0]) if result.error.parts else result.error.message
        return [CheckResult(spec.id, ERROR, say("check.not_run_because", reason=reason), weight=spec.weight)
                for spec in exercise.checks]


def _finish(result: GradingResult, exercise: Exercise, started: float, progress: Progress) -> GradingResult:
    result.duration_s = round(time.perf_counter() - started, 3)
    progress("done", status=result.status)
    return result


def micro_batch_count(exercise: Exercise, kind: str) -> int:
    wl = exercise.workload.for_device(kind)
    if wl.data is not None:
        return wl.data.micro_batches
    if "micro_batches" not in exercise.entrypoint.params:
        return 1
    return len(workload.build_problem(wl.model_dump(), optimizers=False).step_data(0)["micro_batches"])


def _ctx(exercise: Exercise, kind: str, amp_dtype: str) -> dict:
    return {"device_type": kind, "amp_dtype": amp_dtype, "micro_batches": micro_batch_count(exercise, kind),
            "ranks": exercise.workload.ranks}


def inapplicable(spec, kind: str) -> CheckResult | None:
    """Checks with per-device thresholds say they do not apply, whether or not the code ran."""
    if spec.id == "speedup" and kind not in spec.min_speedup:
        return speedup.not_applicable(spec, kind)
    if spec.id == "memory" and kind not in spec.max_ratio:
        return memory.not_applicable(spec, kind)
    if spec.id in profiling.CHECK_IDS:
        return profiling.inapplicable(spec, kind)
    return None


@dataclass
class Evidence:
    """What the trusted processes produced, and where every run started."""

    baseline: RunData
    reference: RunData | None
    start: dict
    layers: dict = field(default_factory=dict)  # module name -> its description (grader/wording/layers.py)
    given: RunData | None = None  # a profiling lesson: the grader's own run of the given step (its starter)
    source: str = ""  # the submission's source, read (never run) by checks that look at what it declares
    given_timing: TimingResult | None = None  # the fixed step timed against the given step


def closeness(sub: RunData, ev: Evidence, near: float) -> dict | None:
    """Where the submission ended against the FP32 run and the mixed-precision reference run."""
    if ev.reference is None or not sub.params:
        return None
    base, ref, start = ev.baseline.params, ev.reference.params, ev.start
    return {"to_fp32": parity.trajectory_distance(sub.params, base, base, start),
            "to_amp": parity.trajectory_distance(sub.params, ref, base, start),
            "amp_vs_fp32": parity.trajectory_distance(ref, base, base, start),
            "toward_amp": parity.toward(sub.params, ref, base), "near": near}


def evaluate(exercise, kind, amp_dtype, static_findings, sub: RunData, ev: Evidence, timing) -> list[CheckResult]:
    describe = layers.namer(ev.layers)
    base = ev.baseline
    out = []
    for spec in exercise.checks:
        if (na := inapplicable(spec, kind)) is not None:
            out.append(na)
        elif spec.id == "call_order":
            out.append(call_order.check(spec, all_traces(sub), _ctx(exercise, kind, amp_dtype), static_findings))
        elif spec.id == "parity":
            out.append(parity.check(spec, amp_dtype, compared_losses(sub), compared_losses(base), sub.params,
                                    base.params, ev.start, describe))
        elif spec.id == "coverage":
            par = exercise.check("parity")
            tol = par.tolerances.get(amp_dtype) if par is not None else None
            out.append(coverage.check(spec, sub.coverage, describe,
                                      closeness(sub, ev, tol.update_rtol if tol else NEAR_FP32), amp_dtype))
        elif spec.id == "memory":
            out.append(memory.check(spec, kind, sub.memory, base.memory))
        elif spec.id == "overflow":
            out.append(overflow.check(spec, sub.overflow, sub.params, len(sub.losses)))
        elif cut_at_overflow(sub) and spec.id in ("speedup", "step_time"):
            key = "check.not_run_overflow" if raised_on_overflow(sub) else "check.not_run_overflow_applied"
            out.append(CheckResult(spec.id, ERROR, say(key, step=sub.overflow["step"]), weight=spec.weight))
        elif spec.id == "speedup":
            out.append(speedup_check(spec, exercise, kind, amp_dtype, timing, out, ev.start))
        elif spec.id == "ranks":
            out.append(ranks.check(spec, sub.ranks, ev.start, describe))
        elif spec.id in profiling.CHECK_IDS:
            out.append(profiling.check(spec, profile_evidence(exercise, amp_dtype, sub, ev, kind, describe)))
        elif hasattr(spec, "python"):
            out.append(lesson.check(spec, lesson.LessonEvidence(
                sub.traces, sub.losses, base.losses, sub.params, base.params, ev.start, kind, amp_dtype,
                sub.scales, sub.overflow["step"] if sub.overflow else None,
                ev.reference.scales if ev.reference else [])))
    return out


def compared_losses(data: RunData) -> list[float]:
    """The losses parity compares: all but the overflowed step's (a loss term made of that step's gradients, a
    gradient penalty say, is inf there in every run with a scaler, and the FP32 baseline has none)."""
    step = data.overflow["step"] if data.overflow else None
    return [v for i, v in enumerate(data.losses) if i != step]


def profile_evidence(exercise, amp_dtype, sub: RunData, ev: Evidence, kind: str, describe) -> profiling.ProfileEvidence:
    par = exercise.check("parity")
    tol = par.tolerances.get(amp_dtype) if par is not None else None
    return profiling.ProfileEvidence(
        ev.source, kind, amp_dtype, sub.census, ev.given.census, sub.params, ev.given.params,
        ev.reference.params if ev.reference else None, ev.start, describe, ev.given_timing,
        tol.update_rtol if tol else NEAR_FP32, static.cuda_only_host_syncs(ev.source, exercise.entrypoint.name))


def speedup_check(spec, exercise, kind, amp_dtype, timing, earlier: list[CheckResult], start: dict) -> CheckResult:
    """Only reached where the device has a threshold, so `timing` was measured."""
    par = exercise.check("parity")
    tol = par.tolerances.get(amp_dtype) if par is not None else None
    if tol is not None:
        dev, name = parity.worst(parity.update_deviations(*timing.after_params, start))
        if not dev <= 3 * tol.update_rtol:
            return CheckResult("speedup", ERROR, say("speedup.timed_params", name=name, dev=dev),
                               {"max_update_rel_diff": dev}, weight=spec.weight)
        dev, at = parity.loss_deviation(timing.losses["submission"], timing.losses["baseline"])
        if len(timing.losses["submission"]) != len(timing.losses["baseline"]) or not dev <= 3 * tol.loss_rtol:
            return CheckResult("speedup", ERROR, say("speedup.timed_losses", step=at, dev=dev),
                               {"max_loss_rel_diff": dev}, weight=spec.weight)
    cov = next((c for c in earlier if c.id == "coverage" and c.status != "pass"), None)
    return speedup.check(spec, kind, timing, cov)


# The error itself is shown once, with its line, as the result's error; each check only says it did not run.


def error_checks(exercise, kind, result, traces, static_findings) -> list[CheckResult]:
    """When the code failed, still say what the trace shows (e.g. unscale_ twice), and mark the rest not run."""
    out = []
    for spec in exercise.checks:
        if (na := inapplicable(spec, kind)) is not None:
            out.append(na)
            continue
        if spec.id == "call_order":
            ctx = _ctx(exercise, kind, result.amp_dtype)
            found = call_order.check(spec, traces, ctx, static_findings)
            if any(f.severity == "error" for f in found.findings):
                out.append(found)
                continue
        steps = [t for t in traces if t.get("phase") != "prepare"]
        if hasattr(spec, "python") and (found := partial_lesson_check(spec, kind, result.amp_dtype, steps)):
            out.append(found)
            continue
        out.append(CheckResult(spec.id, ERROR, say("check.not_run", kind=result.error.kind), weight=spec.weight))
    return out


def partial_lesson_check(spec, kind: str, amp_dtype: str, traces: list[dict]) -> CheckResult | None:
    """A lesson check over the calls made before the code failed: its findings often name the cause (no
    create_graph, then a second backward through a freed graph). A check that needs more evidence is not run."""
    if not traces:
        return None
    try:
        found = lesson.check(spec, lesson.LessonEvidence(traces, [], [], {}, {}, {}, kind, amp_dtype))
    except Exception:  # noqa: BLE001 - it looked at losses or parameters, which a failed run does not have
        return None
    return found if found.status == "fail" else None


def _plotted(values: list[float]) -> list[float | None]:
    return [v if math.isfinite(v) else None for v in values]


def plots(sub: RunData, base: RunData, timing) -> dict:
    data = {"loss": {"submission": _plotted(sub.losses), "baseline": _plotted(base.losses)}}
    if sub.scales:
        data["scale"] = sub.scales
    o = sub.overflow
    if o is not None and o["scale_after"] is not None:  # the step the grader made overflow, and its scale after
        data["scale_overflow"] = {"step": o["step"], "scale": o["scale_after"]}
    if sub.memory and base.memory:
        data["memory"] = {"submission_bytes": memory.whole_run_peak(sub.memory),
                          "baseline_bytes": memory.whole_run_peak(base.memory)}
    if timing is not None:
        data["timing"] = {"baseline_s": timing.baseline_s, "submission_s": timing.submission_s,
                          "steps_per_block": timing.steps_per_block}
    return data

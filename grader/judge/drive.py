"""Driving one worker through the graded steps: which steps are traced, counted
and measured, the overflow the grader forces inside the window, and what each
run leaves behind (`RunData`: losses, scales, traces, counts, parameters). The
same code drives the submission and the trusted runs, so they are compared on
equal terms."""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from grader.checks import overflow
from grader.judge import shards
from grader.judge.protocol import (
    MAX_RECORDS_PER_RUN,
    StepFailure,
    _census,
    _compiled,
    _coverage,
    _floats,
    _memory,
    _params,
    _records,
    _traces,
    code_of,
    malformed_is_protocol,
    rank_replies,
    step_trace,
)
from grader.judge.unexercised import merge_lines
from grader.judge.workers import starting_point, workload_of
from grader.lesson.schema import Exercise
from grader.sandboxes.process import WorkerProcess

Progress = Callable[..., None]


def no_progress(*_args, **_kwargs):
    pass


TRACED_STEPS = 2

# Steps 0 and 1 create gradients and optimizer state: memory is judged from step 2 on. It is profiled from step 0,
# because the CPU profiler cannot report freeing a block that was allocated while it was off.
MEMORY_FROM = 2


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
    overflow: dict | None = None  # the forced-overflow step that decided the run (it was cut there), else the first
    overflows: list[dict] = field(default_factory=list)  # every forced-overflow step: weights and scale around it
    records: list[dict] = field(default_factory=list)  # what the lesson's setup code recorded: {step, name, value}
    ranks: list[RunData] = field(default_factory=list)  # each rank's own evidence, where the code ran as several
    census: list[dict] = field(default_factory=list)  # per step: syncs, copies, matmul dtypes (grader/worker/census.py)
    compiled: list[dict] = field(default_factory=list)  # per step that torch.compile worked in: dynamo's counts
    grad_norms: list[dict] = field(default_factory=list)  # per step: model -> gradient norm (grader tune)
    top_ops: list[dict] | None = None  # torch.profiler's busiest ops of one step (a trusted run of a given step)
    seconds: float | None = None  # a trusted run's own time, from loading its code to its parameters (budget)
    lines_run: set[int] | None = field(default_factory=set)  # the learner's lines that ran; None: not known


def load_params(worker: WorkerProcess) -> dict:
    """Plain tensors only (weights_only): the bytes come from untrusted code. Rank 0's, where there are ranks."""
    return load_rank_params(worker)[0]


def load_rank_params(worker: WorkerProcess) -> list[dict]:
    """Every rank's parameters, each loaded here from its own reply; a sharded model's pieces (FSDP2) put
    together here into each rank's view of the full tensors."""
    reply = worker.request({"cmd": "save"}, max_bytes=worker.params_limit, oversized="error.oversized_params")
    replies = rank_replies(worker, reply)
    return shards.assemble([_params(r) for r in replies], [r.get("shards") for r in replies])


def collect_params(worker: WorkerProcess, data: RunData):
    """The parameters after the compared steps: rank 0's for the run, each rank's for the ranks check."""
    params = load_rank_params(worker)
    data.params = params[0]
    for mine, theirs in zip(data.ranks, params):
        mine.params = theirs


def all_traces(data: RunData) -> list[dict]:
    """Every traced step of every rank, after what prepare did."""
    steps = [t for r in data.ranks for t in r.traces] if data.ranks and not data.traces else data.traces
    return data.prepare_traces + steps


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


@dataclass(frozen=True)
class ForcedOverflow:
    """The graded steps whose gradients the grader makes overflow in a run: `how` is "overflow" (one gradient of
    each optimizer gets an inf, as a float16 backward that overflows would give: the runs with a GradScaler) or "skip" (the
    FP32 baseline, which has no scaler: it runs the step and is put back as a skipped step leaves it)."""

    steps: tuple[int, ...]
    how: str = "overflow"
    bookkeeping: tuple[str, ...] = ()  # the lesson's bookkeeping tensors: a skipped step may change them
    untrained: frozenset = frozenset()  # buffers, and parameters no optimizer holds (grader/judge/workers.py)

    def weights(self, params: dict) -> dict:
        """The tensors whose change means the step applied its inf gradients: the parameters an optimizer trains,
        without the bookkeeping ones. A buffer is no weight (a correct skipped step still ran BatchNorm's
        forward), and a tensor no optimizer holds (an EMA copy) cannot take the inf through the optimizer."""
        return {
            k: v
            for k, v in params.items()
            if k not in self.untrained and not any(fnmatch.fnmatchcase(k, p) for p in self.bookkeeping)
        }

    @property
    def step(self) -> int:
        """The first overflowed step."""
        return self.steps[0]

    @classmethod
    def of(cls, exercise: Exercise, device: str, role: str = "submission") -> ForcedOverflow | None:
        spec = exercise.check("overflow")
        if spec is None:
            return None
        steps = tuple(spec.steps(workload_of(exercise, device).steps))
        how = "skip" if role == "baseline" else "overflow"
        return cls(steps, how, tuple(exercise.workload.bookkeeping), starting_point(exercise, device).untrained)


RAISED = ("exception",)  # what a step that raised on the forced overflow ends as (not a timeout, not memory)


def drive(
    worker: WorkerProcess,
    steps: int,
    *,
    trace: bool,
    measure_memory: bool,
    data: RunData,
    progress: Callable[[int], None] = no_progress,
    census: bool = False,
    overflow: ForcedOverflow | None = None,
    survive_overflow: bool = False,
    grad_norms: bool = False,
    first: int = 0,
):
    """Runs the compared steps one request at a time, collecting evidence. Where the code runs as several ranks,
    each rank's evidence is kept (data.ranks) and the whole run's is made of theirs here: the step's loss is the
    mean of the ranks' losses (each over its share of the batch), the trace holds every rank's calls, and the
    scale and parameters are rank 0's (the ranks check compares the others with it). The step of `overflow` is
    traced too, with the weights loaded before and after it; with `survive_overflow`, an exception raised on
    that step ends the run there as evidence (data.overflow["error"]) instead of as the run's error. `first`: the
    step to start at, in a lesson's later phase (grader/judge/phases.py), whose first step is traced too."""
    n = getattr(worker, "ranks", 1)
    if n > 1 and not data.ranks:
        data.ranks = [RunData() for _ in range(n)]
    for step in range(first, steps):
        progress(step)
        forced = overflow is not None and step in overflow.steps
        traced = trace and (step < TRACED_STEPS or forced or step == first)
        msg = {
            "cmd": "steps",
            "start": step,
            "count": 1,
            "trace": traced,
            "coverage": trace and step < TRACED_STEPS,
            "memory": measure_memory,
            "profile": census,
            **({"grad_norms": True} if grad_norms else {}),
        }
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
                mine.traces += [
                    {**step_trace(t, rank if n > 1 else None), **({"overflow": True} if forced else {})}
                    for t in _traces(reply.get("traces", []), code_of(worker))
                ]
                mine.coverage = _merge_coverage(mine.coverage, _coverage(reply.get("coverage")))
                if "memory" in reply and step >= MEMORY_FROM:
                    mine.memory += _memory(reply["memory"])
                if census:
                    mine.census += _census(reply.get("census"))
                mine.compiled += _compiled(reply.get("compiled"))
                mine.lines_run = merge_lines(mine.lines_run, reply.get("lines_run"))
                records = _records(reply.get("records"), step)
                mine.records += records[: max(0, MAX_RECORDS_PER_RUN - len(mine.records))]
                mine.grad_norms += [{str(k): float(v) for k, v in n.items()} for n in reply.get("grad_norms", [])]
        if forced and _overflow_seen(worker, data, step, before, overflow):
            break  # the weights took the inf: what follows would be the grader's doing, not the learner's
    if n > 1:
        _combine_ranks(data)


def _combine_ranks(data: RunData):
    ranks = data.ranks
    data.losses = [sum(values) / len(values) for values in zip(*(r.losses for r in ranks))]
    data.scales = list(ranks[0].scales)
    data.census = list(ranks[0].census)
    data.compiled = list(ranks[0].compiled)
    data.lines_run = None if any(r.lines_run is None for r in ranks) else set().union(*(r.lines_run for r in ranks))
    data.traces = [t for r in ranks for t in r.traces]
    records = [{**record, "rank": rank} for rank, r in enumerate(ranks) for record in r.records]
    data.records = sorted(records, key=lambda r: (r["step"], r["rank"]))
    data.coverage = None
    for r in ranks:  # copies: merging adds into the first one, which stays that rank's own evidence
        data.coverage = _merge_coverage(data.coverage, copy.deepcopy(r.coverage))


def _losses(reply: dict, forced: bool) -> list[float]:
    """The step's loss; on the overflowed step it may be missing (None: a term made of the overflowed
    gradients, such as a gradient penalty, is inf there in the reference too) and is then NaN here."""
    if forced and isinstance(reply.get("losses"), list) and reply["losses"] == [None]:
        return [math.nan]
    return _floats(reply, "losses", expected=1)


def _overflow_seen(worker: WorkerProcess, data: RunData, step: int, before: list[dict], forced: ForcedOverflow) -> bool:
    """Keeps each rank's weights and scale just before and just after an overflowed step. Where that step
    changed weights (it applied the inf gradients), the run is cut there: it is judged as the window of the steps
    before it, and the overflow check names the mistake. Returns whether it was cut."""
    after = load_rank_params(worker)
    runs = data.ranks or [data]
    applied = any(overflow.changed(forced.weights(was), forced.weights(now)) for was, now in zip(before, after))
    for mine, was, now in zip(runs, before, after):
        record = {
            "step": step,
            "before": was,
            "after": now,
            "error": None,
            "applied": applied,
            "scale_before": mine.scales[-2] if len(mine.scales) > 1 else None,
            "scale_after": mine.scales[-1] if mine.scales else None,
        }
        _keep_overflow(mine, record, decided=applied)
        if applied:
            del mine.losses[step:], mine.scales[step:]
            mine.memory = mine.memory[: max(0, step - MEMORY_FROM)]
            mine.params = was
    if data.ranks:
        data.overflow, data.overflows = data.ranks[0].overflow, data.ranks[0].overflows
        if applied:
            data.params = data.ranks[0].params
    return applied


def _keep_overflow(data: RunData, record: dict, decided: bool):
    """Files one overflowed step's record; `data.overflow` is the one that cut the run, else the first."""
    data.overflows.append(record)
    if decided or data.overflow is None:
        data.overflow = record


def _overflow_raised(data: RunData, step: int, before: list[dict], payload: dict):
    """The code raised on a step the grader made overflow: the run stops there, and what it did until then
    (the weights before that step, the calls it made on it) is judged as a window of `step` steps."""
    payload = {k: v for k, v in payload.items() if k != "rank_traces"}
    partial = partial_trace(payload)
    for rank, (mine, was) in enumerate(zip(data.ranks or [data], before)):
        record = {
            "step": step,
            "before": was,
            "after": None,
            "error": payload,
            "scale_before": mine.scales[-1] if mine.scales else None,
            "scale_after": None,
        }
        _keep_overflow(mine, record, decided=True)
        mine.params = was
        if not data.ranks or payload.get("rank") == rank:
            mine.traces += [{**t, "overflow": True} for t in partial]
    if data.ranks:
        data.overflow, data.overflows = data.ranks[0].overflow, data.ranks[0].overflows
        data.params = data.ranks[0].params


def raised_on_overflow(data: RunData) -> dict | None:
    """The error the code raised on the step the grader made overflow, if it did."""
    return data.overflow.get("error") if data.overflow else None


def cut_at_overflow(data: RunData) -> bool:
    """Whether the run ended at the overflowed step: it raised there, or applied the inf to the weights."""
    return bool(data.overflow and (data.overflow.get("error") or data.overflow.get("applied")))


def window(data: RunData, steps: int) -> RunData:
    """A trusted run as it stood before step `steps` (the overflowed step, which it ran through): what a
    submission whose run ended on that step (it raised, or applied the inf) is compared with."""
    o = next(o for o in data.overflows if o["step"] == steps)
    kept = [o for o in data.overflows if o["step"] < steps]
    return dataclasses.replace(
        data,
        losses=data.losses[:steps],
        scales=data.scales[:steps],
        memory=data.memory[: max(0, steps - MEMORY_FROM)],
        params=o["before"],
        overflow=kept[0] if kept else None,
        overflows=kept,
        records=[r for r in data.records if r.get("step") is not None and r["step"] < steps],
        ranks=[window(r, steps) for r in data.ranks],
    )


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

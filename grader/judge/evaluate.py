"""From evidence to verdict: each check of the lesson judges what the judge
collected (the submission's run beside the trusted runs, static findings,
timing), a check that cannot apply here says so, and an error of the
learner's code still gets the checks that the steps before it can support."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from grader.checks import (
    call_order,
    coverage,
    fsdp_calls,
    lesson,
    memory,
    overflow,
    parity,
    profiling,
    ranks,
    skipped_steps,
    speedup,
)
from grader.checks.advice import advised
from grader.checks.events import backwards
from grader.errors import GraderError
from grader.judge import static
from grader.judge.devices import cpu_matmul_kernel
from grader.judge.drive import RunData, all_traces, cut_at_overflow, raised_on_overflow
from grader.judge.protocol import line_text, protocol
from grader.judge.timing import TimingResult
from grader.lesson.check_specs import FAST_CPU, threshold_for
from grader.lesson.schema import Exercise
from grader.results import ERROR, CheckResult, GradingResult, SubmissionError
from grader.wording import layers
from grader.wording.catalog import Said, say
from grader.worker import workload

NEAR_FP32 = 0.05  # where a lesson has no parity check: how close to the FP32 run a forged run would end


def submission_error(payload: dict, code: str = "", traces: list[dict] | None = None) -> SubmissionError:
    """The error as the learner reads it: the grader's own wording where it has one (a raised exception's text
    is PyTorch's or the learner's, and stays as it is), with the line in front and, with ranks, the rank before
    that. `code` and `traces` (the steps traced before it failed): the line a nonfinite loss is given."""
    said = (
        Said.of(payload["said"])
        if payload.get("said")
        else say("error.raised", detail=payload.get("message", "unknown error"))
    )
    if payload.get("kind") == "nonfinite" and not payload.get("line"):
        line = nonfinite_line(payload.get("events") or [], traces or [], payload.get("step"))
        payload = {**payload, "line": line, "source_line": line_text(code, line)}
    line = payload.get("line")
    if line and payload.get("kind") not in ("timeout",):
        said = say("error.at_line", line=line, message=said)
    if payload.get("rank") is not None:  # `rank 1: line 23: ...`, as docs/authoring.md shows it: whose, then where
        said = say("error.on_rank", rank=payload["rank"], message=said)
    return SubmissionError(
        payload.get("kind", "error"),
        said,
        line,
        payload.get("source_line"),
        payload.get("step"),
        column=payload.get("column"),
    )


def nonfinite_line(events: list[dict], traces: list[dict], step) -> int | None:
    """Where a loss that became inf or NaN comes from, as far as the calls show it: the unscale_ that a later
    backward added scaled gradients after (call_order.unscaled_too_early) in the failing step (`events`) or a
    traced step before it (the mix reaches the weights a step or two before the loss shows it), else the failing
    step's last backward of a loss already inf or NaN. None where neither shows: no line is guessed."""
    before = [
        t["events"]
        for t in traces
        if t.get("phase") != "prepare" and isinstance(t.get("step"), int) and (step is None or t["step"] <= step)
    ]
    for seen in [events, *reversed(before)]:
        if found := call_order.unscaled_too_early(seen):
            return found[0].line
    bad = [e for e in backwards(events) if isinstance(e.get("value"), float) and not math.isfinite(e["value"])]
    return bad[-1].get("line") if bad else None


def blown_up_steps(traces: list[dict]) -> frozenset[int]:
    """The steps whose loss went into backward already inf or NaN: such a step overflows on its own, so a run
    that trains no more after the grader's overflow is not said to keep the grader's inf."""
    return frozenset(
        t["step"]
        for t in traces
        if isinstance(t.get("step"), int)
        and any(isinstance(e.get("value"), float) and not math.isfinite(e["value"]) for e in backwards(t["events"]))
    )


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
        return [
            CheckResult(spec.id, ERROR, say("check.not_run_because", reason=reason), weight=spec.weight)
            for spec in exercise.checks
        ]


def micro_batch_count(exercise: Exercise, kind: str) -> int:
    wl = exercise.workload.for_device(kind)
    if wl.data is not None:
        return wl.data.micro_batches
    if "micro_batches" not in exercise.entrypoint.params:
        return 1
    return len(workload.build_problem(wl.model_dump(), optimizers=False).step_data(0)["micro_batches"])


def call_order_context(exercise: Exercise, kind: str, amp_dtype: str) -> dict:
    """What the call-order rules know of the grading besides the trace (also the float16 pass's)."""
    return {
        "device_type": kind,
        "amp_dtype": amp_dtype,
        "micro_batches": micro_batch_count(exercise, kind),
        "ranks": exercise.workload.ranks,
        "fsdp": "fsdp" in exercise.workload.libraries,
    }


def inapplicable(spec, kind: str, speed: str, amp_dtype: str) -> CheckResult | None:
    """Checks with per-device thresholds say they do not apply, whether or not the code ran. `speed` is the
    kind that timed thresholds are looked up by (cpu_amx on a CPU whose 16-bit matmuls are fast)."""
    if spec.id == "speedup" and threshold_for(spec.min_speedup, speed) is None:
        return speedup.not_applicable(spec, speed, slow_cpu_reason(spec, speed, amp_dtype))
    if spec.id == "memory" and kind not in spec.max_ratio:
        return memory.not_applicable(spec, kind)
    if spec.id in profiling.CHECK_IDS:
        return profiling.inapplicable(spec, kind, speed, slow_cpu_reason(spec, speed, amp_dtype))
    return None


def slow_cpu_reason(spec, speed: str, amp_dtype: str) -> str | None:
    """Why a lesson's fast-CPU threshold does not apply on this CPU, in oneDNN's words."""
    if speed == "cpu" and FAST_CPU in getattr(spec, "min_speedup", {}):
        return cpu_matmul_kernel(amp_dtype).why_not_fast()
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
    untrained: frozenset = frozenset()  # tensors no optimizer trains, by name: the overflow check leaves them out


def closeness(sub: RunData, ev: Evidence, near: float) -> dict | None:
    """Where the submission ended against the FP32 run and the mixed-precision reference run."""
    if ev.reference is None or not sub.params:
        return None
    base, ref, start = ev.baseline.params, ev.reference.params, ev.start
    return {
        "to_fp32": parity.trajectory_distance(sub.params, base, base, start),
        "to_amp": parity.trajectory_distance(sub.params, ref, base, start),
        "amp_vs_fp32": parity.trajectory_distance(ref, base, base, start),
        "toward_amp": parity.toward(sub.params, ref, base),
        "near": near,
    }


def without_bookkeeping(exercise: Exercise, sub: RunData, ev: Evidence, timing):
    """The evidence the built-in checks judge: every run's tensors but the lesson's bookkeeping ones
    (workload.bookkeeping), which its own checks read and which are no weights: parity, overflow, coverage's
    direction and the ranks check leave them out."""
    if not exercise.workload.bookkeeping:
        return sub, ev, timing

    def kept(params):
        return {k: v for k, v in params.items() if not exercise.workload.is_bookkeeping(k)} if params else params

    def run(data: RunData | None) -> RunData | None:
        if data is None:
            return None
        overflows = [{**o, "before": kept(o["before"]), "after": kept(o.get("after"))} for o in data.overflows]
        return dataclasses.replace(
            data, params=kept(data.params), overflows=overflows, ranks=list(map(run, data.ranks))
        )

    ev = dataclasses.replace(ev, baseline=run(ev.baseline), reference=run(ev.reference), given=run(ev.given))
    ev.start = kept(ev.start)
    if timing is not None and timing.after_params:
        timing = dataclasses.replace(timing, after_params=tuple(map(kept, timing.after_params)))
    return run(sub), ev, timing


def evaluate(
    exercise, kind, amp_dtype, static_findings, sub: RunData, ev: Evidence, timing, speed: str | None = None
) -> list[CheckResult]:
    whole_sub, whole_ev = sub, ev  # what the lesson's own checks see, bookkeeping tensors included
    sub, ev, timing = without_bookkeeping(exercise, sub, ev, timing)
    describe = layers.namer(ev.layers)
    base = ev.baseline
    speed = speed or kind
    out = []
    for spec in exercise.checks:
        if (na := inapplicable(spec, kind, speed, amp_dtype)) is not None:
            out.append(na)
        elif spec.id == "call_order":
            ctx = {**call_order_context(exercise, kind, amp_dtype), "compiled": sub.compiled}
            out.append(call_order.check(spec, all_traces(sub), ctx, static_findings))
        elif spec.id == "parity":
            out.append(
                parity.check(
                    spec,
                    amp_dtype,
                    compared_losses(sub),
                    compared_losses(base),
                    sub.params,
                    base.params,
                    ev.start,
                    describe,
                    compared_steps(sub),
                    len(sub.losses),
                    "fsdp" in exercise.workload.libraries and fsdp_calls.holds_replaced_tensors(prepare_events(sub)),
                )
            )
        elif spec.id == "coverage":
            par = exercise.check("parity")
            tol = par.tolerances.get(amp_dtype) if par is not None else None
            out.append(
                coverage.check(
                    spec,
                    sub.coverage,
                    describe,
                    closeness(sub, ev, tol.update_rtol if tol else NEAR_FP32),
                    amp_dtype,
                    (fp8 := "torchao" in exercise.workload.libraries),
                    fp8 and kind != "cuda" and model_ran_compiled(sub),
                    "fsdp" in exercise.workload.libraries,
                )
            )
        elif spec.id == "memory":
            out.append(memory.check(spec, kind, sub.memory, base.memory))
        elif spec.id == "overflow":
            amp = exercise.workload.amp
            out.append(
                overflow.check(
                    spec,
                    sub.overflows,
                    sub.params,
                    len(sub.losses),
                    ev.untrained,
                    sub.scales,
                    (amp.growth_interval, amp.growth_factor),
                    blown_up_steps(sub.traces),
                )
            )
        elif cut_at_overflow(sub) and spec.id in ("speedup", "step_time"):
            key = "check.not_run_overflow" if raised_on_overflow(sub) else "check.not_run_overflow_applied"
            out.append(CheckResult(spec.id, ERROR, say(key, step=sub.overflow["step"]), weight=spec.weight))
        elif spec.id == "speedup":
            out.append(speedup_check(spec, exercise, speed, amp_dtype, timing, out, ev.start))
        elif spec.id == "ranks":
            out.append(ranks.check(spec, sub.ranks, ev.start, describe))
        elif spec.id in profiling.CHECK_IDS:
            out.append(profiling.check(spec, profile_evidence(exercise, amp_dtype, sub, ev, kind, describe, speed)))
        elif hasattr(spec, "python"):
            out.append(
                lesson.check(
                    spec,
                    lesson.LessonEvidence(
                        sub.traces,
                        sub.losses,
                        base.losses,
                        whole_sub.params,
                        whole_ev.baseline.params,
                        whole_ev.start,
                        kind,
                        amp_dtype,
                        sub.scales,
                        sub.overflows[0]["step"] if sub.overflows else None,
                        ev.reference.scales if ev.reference else [],
                        sub.compiled,
                        [o["step"] for o in sub.overflows],
                        sub.records,
                        base.records,
                        ev.reference.records if ev.reference else [],
                        prepare_events(sub),
                        dict((sub.coverage or {}).get("flops") or {}),
                        ev.source,
                    ),
                )
            )
    forced = {o["step"] for o in sub.overflows}
    skipped = skipped_steps.every_step_skipped(sub.scales, exercise.workload.amp.init_scale, forced, all_traces(sub))
    return [advised(exercise.check(result.id), result) for result in skipped_steps.reworded(out, skipped)]


def model_ran_compiled(data: RunData) -> bool:
    """Whether the lesson model's own forward ran inside a dynamo graph in every traced step (the steps whose
    FLOPs coverage counts): grader/worker/compiling.py counts the calls of graphs that hold the model's
    parameters. Something else compiled in the process (a throwaway lambda) says nothing about the model."""
    ran = {c["step"] for c in data.compiled if c.get("model_runs", 0) > 0}
    return bool(data.traces) and all(t.get("step") in ran for t in data.traces)


def compared_steps(data: RunData) -> list[int]:
    """The step number of each of compared_losses'."""
    steps = {o["step"] for o in data.overflows}
    return [i for i in range(len(data.losses)) if i not in steps]


def prepare_events(data: RunData) -> list[dict]:
    """What the learner's prepare did, once (rank 0's)."""
    return [e for t in data.prepare_traces[:1] for e in t["events"]]


def compared_losses(data: RunData) -> list[float]:
    """The losses parity compares: all but the overflowed steps' (a loss term made of that step's gradients, a
    gradient penalty say, is inf there in every run with a scaler, and the FP32 baseline has none)."""
    steps = {o["step"] for o in data.overflows}
    return [v for i, v in enumerate(data.losses) if i not in steps]


def profile_evidence(
    exercise, amp_dtype, sub: RunData, ev: Evidence, kind: str, describe, speed: str | None = None
) -> profiling.ProfileEvidence:
    par = exercise.check("parity")
    tol = par.tolerances.get(amp_dtype) if par is not None else None
    return profiling.ProfileEvidence(
        ev.source,
        kind,
        amp_dtype,
        sub.census,
        ev.given.census,
        sub.params,
        ev.given.params,
        ev.reference.params if ev.reference else None,
        ev.start,
        describe,
        ev.given_timing,
        tol.update_rtol if tol else NEAR_FP32,
        static.cuda_only_host_syncs(ev.source, exercise.entrypoint.name),
        speed or kind,
    )


def speedup_check(spec, exercise, speed, amp_dtype, timing, earlier: list[CheckResult], start: dict) -> CheckResult:
    """Only reached where the device has a threshold, so `timing` was measured."""
    par = exercise.check("parity")
    tol = par.tolerances.get(amp_dtype) if par is not None else None
    if tol is not None:
        dev, name = parity.worst(parity.update_deviations(*timing.after_params, start))
        if not dev <= 3 * tol.update_rtol:
            return CheckResult(
                "speedup",
                ERROR,
                say("speedup.timed_params", name=name, dev=dev),
                {"max_update_rel_diff": dev},
                weight=spec.weight,
            )
        # the timed steps go on training well past the graded window, where the loss may near zero: differences
        # are measured against a tenth of where the timed steps started, not against a vanishing loss
        timed = timing.losses["baseline"]
        floor = 0.1 * abs(timed[0]) if timed else 0.0
        dev, at = parity.loss_deviation(timing.losses["submission"], timed, floor)
        if len(timing.losses["submission"]) != len(timing.losses["baseline"]) or not dev <= 3 * tol.loss_rtol:
            return CheckResult(
                "speedup",
                ERROR,
                say("speedup.timed_losses", step=at, dev=dev),
                {"max_loss_rel_diff": dev},
                weight=spec.weight,
            )
    cov = next((c for c in earlier if c.id == "coverage" and c.status != "pass"), None)
    return speedup.check(spec, speed, timing, cov)


def crash_evidence(kind, amp_dtype, sub: RunData, base: RunData | None, source: str, failed: list[dict]):
    """What a failed run leaves the lesson's checks: the finished steps' losses, scales, records and compile
    counts, what the failing step recorded before it failed (`failed`), the FP32 baseline's, the source. No
    parameters: none are read back from a failed run (a check that needs them is not run)."""
    return lesson.LessonEvidence(
        [],
        sub.losses,
        base.losses if base else [],
        {},
        {},
        {},
        kind,
        amp_dtype,
        sub.scales,
        sub.overflows[0]["step"] if sub.overflows else None,
        compiled=sub.compiled,
        overflow_steps=[o["step"] for o in sub.overflows],
        records=[*sub.records, *failed],
        baseline_records=base.records if base else [],
        prepare_events=prepare_events(sub),
        source=source,
    )


def error_checks(
    exercise,
    kind,
    result,
    traces,
    static_findings,
    speed: str | None = None,
    known: lesson.LessonEvidence | None = None,
) -> list[CheckResult]:
    """When the code failed, still say what the trace shows (e.g. unscale_ twice) and what the lesson's checks
    find in the evidence the run left (`known`, crash_evidence), and mark the rest not run."""
    out = []
    for spec in exercise.checks:
        if (na := inapplicable(spec, kind, speed or kind, result.amp_dtype)) is not None:
            out.append(na)
            continue
        if spec.id == "call_order":
            ctx = call_order_context(exercise, kind, result.amp_dtype)
            found = call_order.check(spec, traces, ctx, static_findings)
            if any(f.severity == "error" for f in found.findings):
                out.append(advised(spec, found))
                continue
        steps = [t for t in traces if t.get("phase") != "prepare"]
        known = known or lesson.LessonEvidence([], [], [], {}, {}, {}, kind, result.amp_dtype)
        if hasattr(spec, "python") and (found := lesson.partial_check(spec, dataclasses.replace(known, traces=steps))):
            out.append(found)
            continue
        out.append(CheckResult(spec.id, ERROR, say("check.not_run", kind=result.error.kind), weight=spec.weight))
    return out

"""A short float16 pass on the CPU, for lessons whose CUDA recipe is float16 with a GradScaler. A CPU grades
such a lesson in bfloat16 (workload.amp.cpu_dtype), so the branch a learner wrote for float16
(`if amp_dtype == torch.float16:`), the one CUDA runs, never executes and no check sees it. A CPU can run it:
autocast has float16 on the CPU and GradScaler("cpu") scales it. Where the bfloat16 grading left learner lines
unrun under a condition that is not the device's (a `device_type == "cuda"` branch stays unrun here whatever the
dtype, and grader/judge/unexercised.py reads it statically), the submission runs again in its own sandboxed
worker with amp_dtype float16, for PASS_STEPS traced steps, and the call-order rules (grader/checks/call_order.py,
the same code that judges every trace) judge its trace. Its mistakes fail call_order, each said as found in the
float16 pass; the lines it ran are no longer noted as not exercised.

Only the call order is judged from it. Parity, coverage, speed and memory are not: float16 on a CPU runs other
kernels than CUDA's (other sums, other overflows), the pass has no FP32 run beside it and is not the graded
window, so a number from it would judge this CPU, not the code. No overflow is forced in it (the overflow
check judged the same scaler calls in bfloat16), and nothing depends on the scale: a step the scaler skips
because float16 overflowed here is still judged by which calls ran and in what order (call_order's rules read
the scale only through `reached`, and a step whose gradients were not finite is not judged there). An error in
the pass is no failure by itself (a CPU may lack a float16 kernel CUDA has): the calls made before it are judged,
and a note says where it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.checks import call_order
from grader.checks.advice import advised
from grader.judge.drive import RunData, all_traces, drive, partial_trace
from grader.judge.evaluate import call_order_context
from grader.judge.protocol import StepFailure
from grader.judge.unexercised import skipped_blocks
from grader.judge.workers import init_worker, spawn_worker
from grader.lesson.schema import Exercise
from grader.results import FAIL, CheckResult, Finding, GradingResult, finding, message_of
from grader.sandboxes.process import WorkerFailure
from grader.wording.catalog import Said, say

PASS_STEPS = 2  # the steps a trace judges (drive.TRACED_STEPS): a second one shows what the first left behind
DTYPE = "float16"
# words of a condition that is about the dtype or the scaler, not (only) the device
NOT_DEVICE_ONLY = ("dtype", "float16", "half", "fp16", "bfloat16", "bf16", "scal")


def applies(exercise: Exercise, device: str) -> bool:
    """A CPU grading of a lesson that CUDA runs in float16 with the grader's GradScaler, graded here in another
    dtype."""
    amp = exercise.workload.amp
    return (
        not device.startswith("cuda")
        and amp.cuda_dtype == DTYPE
        and amp.cpu_dtype != DTYPE
        and amp.scaler
        and exercise.check("call_order") is not None
    )


def _device_only(condition: str | None) -> bool:
    """A test of the device alone (`device_type == "cuda"`, `x.is_cuda`): false in the float16 pass too."""
    if condition is None:
        return False
    text = condition.lower()
    return ("cuda" in text or "device" in text) and not any(w in text for w in NOT_DEVICE_ONLY)


def wanted(exercise: Exercise, device: str, source: str, ran: set[int] | None) -> bool:
    """Whether the pass may run something the grading did not: a block of the learner's that did not run under
    a condition other than the device's. A grading that ran every line costs nothing more."""
    if not ran or not applies(exercise, device):
        return False
    return any(not b.whole_function and not _device_only(b.condition) for b in skipped_blocks(source, ran))


def in_float16(exercise: Exercise) -> Exercise:
    """The lesson as the pass runs it: the CPU workload (never the fast-CPU one: no probe, the small model),
    its grader-made scaler and amp_dtype float16."""
    workload = exercise.workload
    amp = workload.amp.model_copy(update={"cpu_dtype": DTYPE})
    return exercise.model_copy(update={"workload": workload.model_copy(update={"amp": amp, "cpu_amx": None})})


@dataclass
class Float16Run:
    """What the pass left: its traces (a failed step's calls too), the lines it ran and the failure, if any."""

    traces: list[dict] = field(default_factory=list)
    lines_run: set[int] | None = None
    compiled: list[dict] = field(default_factory=list)
    failure: dict | None = None  # the worker's error payload


def run_pass(launcher, exercise: Exercise, source: str, device: str, cancel=None, budget_s=None) -> Float16Run:
    """The submission in a new sandboxed worker, amp_dtype float16, PASS_STEPS steps, every one traced. Bounded
    by the grading's own budget for the code (grader/judge/budget.py: the graded steps and more, of which the
    pass runs two) where it is known, so code that stalls only in float16 cannot hold a worker longer than
    the grading would let it."""
    lesson = in_float16(exercise)
    data, out, worker = RunData(), Float16Run(), None
    try:
        worker = spawn_worker(launcher, lesson, source, "submission.py", device, trace=True)
        worker.cancel = cancel
        worker.set_budget(budget_s)
        init_worker(launcher, worker)
        data.prepare_traces = worker.prepare_traces
        drive(worker, PASS_STEPS, trace=True, measure_memory=False, data=data)
    except (StepFailure, WorkerFailure) as exc:
        out.failure = exc.payload
        data.traces += exc.payload.get("rank_traces", []) + partial_trace(exc.payload)
    finally:
        if worker is not None:
            worker.close()
    out.traces, out.lines_run, out.compiled = all_traces(data), data.lines_run, data.compiled
    return out


def found_in_pass(f: Finding) -> Finding:
    """A call-order finding of the pass, said as found there; its fix is the rule's own."""
    said = say("float16_pass.found", message=message_of(f))
    fix = (f.text or {}).get("fix") or f.fix
    return Finding(f.id, str(said), f.fix, f.line, f.severity, text={"message": said.to_dict(), "fix": fix})


def findings(exercise: Exercise, run: Float16Run) -> list[Finding]:
    """What the call-order rules find in the pass's trace (a failed step's calls judged as a partial step, as
    evaluate.error_checks does), and a note where the pass stopped early."""
    out = []
    if run.traces:
        ctx = {**call_order_context(exercise, "cpu", DTYPE), "compiled": run.compiled}
        judged = call_order.check(exercise.check("call_order"), run.traces, ctx, [])
        out = [found_in_pass(f) for f in judged.findings if f.severity == "error"]
    if run.failure is not None:
        said = Said.of(run.failure["said"]) if run.failure.get("said") else run.failure.get("message", "")
        line = run.failure.get("line")
        out.append(finding("float16_pass", line, severity="info", key="float16_pass.stopped", message=said))
    return out


def judge(result: GradingResult, exercise: Exercise, run: Float16Run) -> list[CheckResult]:
    """The verdict's checks with the pass's findings: a mistake the call_order check did not already name fails
    it. A note (the pass stopped) joins the result's notes."""
    new = findings(exercise, run)
    result.notes += [f for f in new if f.severity == "info"]
    known = {f.id for c in result.checks if c.id == "call_order" for f in c.findings if f.severity == "error"}
    added = [f for f in new if f.severity == "error" and f.id not in known]
    if not added:
        return result.checks
    spec = exercise.check("call_order")
    return [advised(spec, with_findings(c, added)) if c.id == "call_order" else c for c in result.checks]


def with_findings(check: CheckResult, added: list[Finding]) -> CheckResult:
    """The check failed by the pass's mistakes beside its own, worded as call_order.check words several."""
    findings = check.findings + added
    errors = [f for f in findings if f.severity == "error"]
    n = len(errors)
    message = say("call_order.mistakes", n=n, first=message_of(errors[0])) if n > 1 else message_of(errors[0])
    measured = {**check.measured, "mistakes": [f.id for f in errors], "float16_pass": [f.id for f in added]}
    return CheckResult(check.id, FAIL, message, measured, check.threshold, findings, check.weight)


def lines_after(ran: set[int] | None, run: Float16Run) -> set[int] | None:
    """The lines that ran in the grading or in the pass (the pass's count lost: the grading's alone). A step
    that failed reports no count, but its traced calls ran at their lines, and so did the line that raised."""
    if ran is None or run.lines_run is None:
        return ran
    called = {e["line"] for t in run.traces for e in t["events"] if isinstance(e.get("line"), int)}
    failure = run.failure or {}
    raised = {failure["line"]} if failure.get("kind") == "exception" and isinstance(failure.get("line"), int) else set()
    return ran | run.lines_run | called | raised

"""`grader tune ID`: what sizing a lesson's workload needs, measured on this machine with the grader's own trusted
runs (the FP32 baseline and the reference, each in its sandbox): the loss and each model's gradient norm per step,
the step time of both (timed as a speedup check times them) and their peak memory, per device kind this machine
can grade on. An instructor sizes `steps`, the learning rate and the thresholds from it instead of a script."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import torch

from grader.authoring.validate import MIN_LOSS_DROP
from grader.judge.devices import amp_dtype_for, speed_kind, workload_kind
from grader.judge.drive import RunData, no_progress
from grader.judge.timing import RatioEstimate, TimingPlan, time_interleaved
from grader.judge.trusted_runs import spawn_trusted, trusted_run
from grader.judge.workers import workload_of
from grader.lesson.schema import Exercise

ROLES = ("baseline", "reference")
# Short: tune measures to size a workload; the speedup check's own timing is what grades it.
PLAN = TimingPlan(min_rounds=3, max_rounds=12, budget_s=5.0, warmup_steps=1)


@dataclass
class Sizing:
    device: str
    kind: str  # the workload graded there: cpu, cpu_amx or cuda
    amp_dtype: str
    runs: dict[str, RunData] = field(default_factory=dict)
    step_s: dict[str, float] = field(default_factory=dict)  # role -> seconds per step (median of timed blocks)
    speedup: RatioEstimate | None = None


def with_steps(exercise: Exercise, steps: int) -> Exercise:
    """The lesson with `steps` graded steps on every device kind (its overrides' steps too)."""
    wl = exercise.workload
    changes = {"steps": steps}
    for kind in ("cuda", "cpu_amx"):
        if (override := getattr(wl, kind)) is not None and override.steps is not None:
            changes[kind] = override.model_copy(update={"steps": steps})
    return exercise.model_copy(update={"workload": wl.model_copy(update=changes)})


def devices_here() -> tuple[list[str], list[str]]:
    """(devices to measure, why the other device kinds cannot be measured here)."""
    if torch.cuda.is_available():
        return ["cpu", "cuda"], []
    return ["cpu"], ["cuda: not available here (PyTorch sees no GPU); measure on a GPU machine before relying on it"]


def measure(exercise: Exercise, device: str, launcher) -> Sizing:
    """Both trusted runs with their evidence, then both timed against each other on the workers that ran them."""
    sizing = Sizing(device, workload_kind(exercise, device), amp_dtype_for(exercise, device))
    workers = {role: spawn_trusted(launcher, exercise, role, device) for role in ROLES}
    try:
        for role, worker in workers.items():
            sizing.runs[role] = trusted_run(launcher, exercise, role, device, worker, keep=True, sizing=True)
        steps = workload_of(exercise, device).steps
        timing = time_interleaved(workers["baseline"], workers["reference"], steps, PLAN, no_progress)
        per_step = timing.steps_per_block
        sizing.step_s = {
            "baseline": statistics.median(timing.baseline_s) / per_step,
            "reference": statistics.median(timing.submission_s) / per_step,
        }
        sizing.speedup = timing.per_core()
    finally:
        for worker in workers.values():
            worker.close()
    return sizing


def cpu_kind_note(exercise: Exercise) -> str:
    """Whether this CPU grades as cpu_amx: the grader's own probe of the matmul kernel oneDNN picks."""
    dtype = exercise.workload.amp.cpu_dtype
    if speed_kind("cpu", dtype) == "cpu_amx":
        return f"cpu_amx: this CPU runs {dtype} matmuls on AMX, so cpu_amx thresholds (and workload.cpu_amx) apply"
    return f"cpu_amx: not this CPU ({dtype} matmuls do not run on AMX here; the grader's probe says so)"


def _mib(run: RunData) -> str:
    peaks = [m.get("peak_bytes") for m in run.memory if m.get("peak_bytes") is not None]
    return f"{max(peaks) / 2**20:.1f} MiB" if peaks else "not measured"


def report(exercise: Exercise, sizing: Sizing) -> str:
    """Plain text: a table of the steps, then the times, memory and what the loss did."""
    base, ref = sizing.runs["baseline"], sizing.runs["reference"]
    models = sorted({m for n in base.grad_norms + ref.grad_norms for m in n})
    head = ["step", "loss fp32", f"loss ref ({sizing.amp_dtype})"]
    head += [f"grad norm fp32 {m}" for m in models] + [f"grad norm ref {m}" for m in models]
    rows = []
    for step in range(max(len(base.losses), len(ref.losses))):
        cells = [str(step), _num(base.losses, step), _num(ref.losses, step)]
        for run in (base, ref):
            cells += [_num([n.get(m) for n in run.grad_norms], step) for m in models]
        rows.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [f"{exercise.id} on {sizing.device} (workload {sizing.kind}, {len(base.losses)} steps)", line(head)]
    out += [line(r) for r in rows]
    est = sizing.speedup
    out.append(
        f"step time: fp32 {sizing.step_s['baseline'] * 1e3:.1f} ms, reference {sizing.step_s['reference'] * 1e3:.1f} "
        f"ms; speedup {est.ratio:.2f} (95% {est.low:.2f}-{est.high:.2f}, {est.rounds} rounds, per core)"
    )
    out.append(f"peak memory (steps 2+): fp32 {_mib(base)}, reference {_mib(ref)}")
    if len(base.losses) >= 2 and base.losses[0] > 0:
        drop = 1 - base.losses[-1] / base.losses[0]
        verdict = "diverges" if drop < 0 else ("enough" if drop >= MIN_LOSS_DROP else "too little")
        out.append(f"fp32 loss falls {drop:.0%} over the steps (validate needs {MIN_LOSS_DROP:.0%}): {verdict}")
    return "\n".join(out)


def _num(values: list, i: int) -> str:
    return f"{values[i]:.4g}" if i < len(values) and values[i] is not None else "-"


def tune(exercise: Exercise, launcher, steps: int | None = None) -> tuple[list[Sizing], list[str]]:
    """Every device kind measurable here, and a line for each that is not."""
    if steps is not None:
        exercise = with_steps(exercise, steps)
    devices, unavailable = devices_here()
    measured = [measure(exercise, device, launcher) for device in devices]
    return measured, [cpu_kind_note(exercise), *unavailable]

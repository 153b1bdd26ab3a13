"""Statistics for paired, interleaved timing rounds. Each round times a block
of baseline steps and a block of submission steps back to back (in alternating
order), so drift hits both; the verdict uses the lower bound of a confidence
interval on the ratio, so noise can make a pass inconclusive but never forges one. Also the timed phase itself:
interleaved rounds between the two workers, with the grading's budget paused while the idle one waits."""

from __future__ import annotations

import math
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from grader.judge import budget
from grader.judge.drive import Progress
from grader.judge.protocol import _floats, _ok, code_of, malformed_is_protocol
from grader.lesson.schema import Exercise
from grader.sandboxes.process import WorkerProcess

# two-sided 95% Student-t quantiles; beyond 30 degrees of freedom the normal one
_T95 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


# two-sided 99.9% ones: the stricter interval that may stop timing early (see TimingPlan)
_T999 = [
    636.6,
    31.60,
    12.92,
    8.610,
    6.869,
    5.959,
    5.408,
    5.041,
    4.781,
    4.587,
    4.437,
    4.318,
    4.221,
    4.140,
    4.073,
    4.015,
    3.965,
    3.922,
    3.883,
    3.850,
    3.819,
    3.792,
    3.768,
    3.745,
    3.725,
    3.707,
    3.690,
    3.674,
    3.659,
    3.646,
]


def t95(dof: int) -> float:
    return _T95[dof - 1] if dof <= len(_T95) else 1.96


def t999(dof: int) -> float:
    return _T999[dof - 1] if dof <= len(_T999) else 3.291


@dataclass
class RatioEstimate:
    ratio: float
    low: float
    high: float
    rounds: int

    @property
    def relative_half_width(self) -> float:
        return (self.high - self.low) / (2 * self.ratio) if self.ratio else math.inf


def estimate(baseline_s: list[float], submission_s: list[float], quantile=t95) -> RatioEstimate:
    """Geometric mean of per-round speedups (baseline/submission) with a t interval in log space (95% unless
    another `quantile` function is given)."""
    logs = [math.log(b / s) for b, s in zip(baseline_s, submission_s) if b > 0 and s > 0]
    n = len(logs)
    if n == 0:
        return RatioEstimate(math.nan, math.nan, math.nan, 0)
    mean = statistics.fmean(logs)
    if n == 1:
        return RatioEstimate(math.exp(mean), 0.0, math.inf, 1)
    half = quantile(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return RatioEstimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)


@dataclass
class TimingPlan:
    """When to stop timing: once the 95% interval is tight, or (with a `threshold`) once a 99.9% interval
    already decides the verdict: its lower bound above the threshold (a pass) or its upper bound below it (a
    fail). Looking after every round would let chance decide with a 95% interval; the stricter one keeps an
    early stop honest, and the 95% interval it contains gives the same verdict. Stopping early only frees the
    device sooner."""

    min_rounds: int = 5
    max_rounds: int = 60
    target_half_width: float = 0.03
    budget_s: float = 30.0
    block_target_s: float = 0.05
    warmup_steps: int = 3
    threshold: float | None = None

    def block_steps(self, step_s: float) -> int:
        return max(1, min(50, math.ceil(self.block_target_s / max(step_s, 1e-6))))

    def decided(self, strict: RatioEstimate) -> bool:
        return self.threshold is not None and (strict.low >= self.threshold or strict.high < self.threshold)

    def done(self, est: RatioEstimate, elapsed_s: float, strict: RatioEstimate | None = None) -> bool:
        """`est` is the 95% interval; `strict` the 99.9% one over the same rounds."""
        if est.rounds >= self.max_rounds or elapsed_s >= self.budget_s:
            return True
        return est.rounds >= self.min_rounds and (
            est.relative_half_width <= self.target_half_width or (strict is not None and self.decided(strict))
        )


@dataclass
class TimingResult:
    baseline_s: list[float] = field(default_factory=list)
    submission_s: list[float] = field(default_factory=list)
    steps_per_block: int = 1
    estimate: RatioEstimate | None = None
    elapsed_s: float = 0.0
    after_params: tuple = ()  # (submission, baseline) parameters once timing is over
    losses: dict = field(default_factory=lambda: {"baseline": [], "submission": []})  # of the timed steps
    next_step: int = 0  # the first step index that timing did not use
    # CPU seconds each worker's processes used in their timed blocks, all threads summed (None: not seen)
    cpu_s: dict = field(default_factory=lambda: {"baseline": 0.0, "submission": 0.0})
    device: str = "cpu"

    def cores(self, role: str) -> float | None:
        """How many cores a worker kept busy while timed, on average (on a CPU; None where not seen)."""
        wall = sum(self.baseline_s if role == "baseline" else self.submission_s)
        cpu = self.cpu_s.get(role)
        if cpu is None or wall <= 0 or self.device.startswith("cuda"):
            return None
        return cpu / wall

    def per_core(self) -> RatioEstimate:
        """The speedup per core: on a CPU the FP32 baseline computes on one core, so a submission that keeps
        more busy (torch.set_num_threads, processes of its own) has its times weighed by the cores it used,
        and threads buy no speedup; 16-bit matmuls must. On CUDA, and where the cores cannot be seen, the
        measured estimate as it is."""
        est = self.estimate
        sub, base = self.cores("submission"), self.cores("baseline")
        if est is None or sub is None or base is None:
            return est
        weight = max(1.0, sub) / max(1.0, base)
        return RatioEstimate(est.ratio / weight, est.low / weight, est.high / weight, est.rounds)


def time_interleaved(
    base: WorkerProcess, sub: WorkerProcess, first_step: int, plan: TimingPlan, progress: Progress
) -> TimingResult:
    """Warm-up, then rounds of one block each, order alternating, the idle worker frozen."""

    def timed(worker, other, start, count, losses=None, role=None):
        other.freeze()
        try:
            cpu0 = worker.cpu_seconds() if role else None
            t0 = time.perf_counter()
            reply = _ok(worker.request({"cmd": "steps", "start": start, "count": count}), code=code_of(worker))
            elapsed = time.perf_counter() - t0
            cpu1 = worker.cpu_seconds() if role else None
        finally:
            other.thaw()
        if role is not None:
            seen = cpu0 is not None and cpu1 is not None and result.cpu_s.get(role) is not None
            result.cpu_s[role] = result.cpu_s[role] + (cpu1 - cpu0) if seen else None
        if losses is not None:
            with malformed_is_protocol():
                losses += _floats(reply, "losses", expected=count)
        return elapsed

    step = first_step
    result = TimingResult(device=base.spec.device if base.spec is not None else "cpu")
    warm = [timed(base, sub, step, plan.warmup_steps), timed(sub, base, step, plan.warmup_steps)]
    step += plan.warmup_steps
    k = result.steps_per_block = plan.block_steps(min(warm) / plan.warmup_steps)
    on_cuda = result.device.startswith("cuda")  # the host's cores say nothing of a GPU's work: not read there
    started = time.perf_counter()
    while True:
        order = [(base, sub), (sub, base)] if len(result.baseline_s) % 2 == 0 else [(sub, base), (base, sub)]
        for worker, other in order:
            role = "baseline" if worker is base else "submission"
            elapsed = timed(worker, other, step, k, result.losses[role], None if on_cuda else role)
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


def announce_steps(worker: WorkerProcess, total: int, progress):
    """The progress callback of the training steps: each step is announced with the limit that holds for it, and
    again (`budget`) when the grading's budget, known only once the trusted runs end, cuts the running step's limit
    short: the status line then states the limit that applies (it once said 120 s of a step held to 32 s)."""
    running = {}

    def started(step: int) -> None:
        running["n"] = step + 1
        progress("step", n=step + 1, total=total, limit_s=step_limit(worker, worker.limits))

    def cut_short(left_s: float) -> None:
        if running:
            progress("step", n=running["n"], total=total, limit_s=max(0.0, round(left_s, 1)), budget=True)

    worker.on_budget = cut_short
    return started


def budget_when_known(worker: WorkerProcess, futures: dict, limits, exercise: Exercise, timed_s: list[float]):
    """Sets the submission's whole-grading budget (grader/judge/budget.py) once every trusted run it is measured against
    has its time: at once where they were stored, else when the last one finishes."""

    def finished(_future):
        if all(f.done() for f in futures.values()):  # the last one's callback (or two at once: the same value)
            runs = {r: f.result() for r, f in futures.items() if f.exception() is None}
            worker.set_budget(
                budget.derived(
                    limits,
                    {r: d.seconds for r, d in runs.items()},
                    timed_s,
                    exercise.workload.grading_budget_s,
                    {r: budget.compile_seconds(d) for r, d in runs.items()},
                )
            )

    if not futures:
        worker.set_budget(exercise.workload.grading_budget_s)
    for future in futures.values():
        future.add_done_callback(finished)

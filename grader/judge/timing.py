"""Statistics for paired, interleaved timing rounds. Each round times a block
of baseline steps and a block of submission steps back to back (in alternating
order), so drift hits both; the verdict uses the lower bound of a confidence
interval on the ratio, so noise can make a pass inconclusive but never forges one."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

# two-sided 95% Student-t quantiles; beyond 30 degrees of freedom the normal one
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


# two-sided 99.9% ones: the stricter interval that may stop timing early (see TimingPlan)
_T999 = [636.6, 31.60, 12.92, 8.610, 6.869, 5.959, 5.408, 5.041, 4.781, 4.587, 4.437, 4.318, 4.221, 4.140, 4.073,
         4.015, 3.965, 3.922, 3.883, 3.850, 3.819, 3.792, 3.768, 3.745, 3.725, 3.707, 3.690, 3.674, 3.659, 3.646]


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
        return est.rounds >= self.min_rounds and (est.relative_half_width <= self.target_half_width
                                                  or (strict is not None and self.decided(strict)))


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

"""Speedup over the FP32 baseline, timed by the grading process itself."""

from __future__ import annotations

from grader.results import FAIL, NOT_APPLICABLE, PASS, CheckResult
from grader.wording.catalog import say


def not_applicable(spec, device_kind: str) -> CheckResult:
    return CheckResult("speedup", NOT_APPLICABLE, say("speedup.not_applicable", device=device_kind), weight=spec.weight)


def check(spec, device_kind: str, timing, coverage=None) -> CheckResult:
    """`coverage` is a failed coverage check, whose message explains a missing speedup."""
    need = spec.min_speedup[device_kind]
    est = timing.estimate
    measured = {
        "speedup": round(est.ratio, 3),
        "ci95_low": round(est.low, 3),
        "ci95_high": round(est.high, 3),
        "rounds": est.rounds,
        "steps_per_block": timing.steps_per_block,
        "timed_s": round(timing.elapsed_s, 2),
    }
    threshold = {"min_speedup": need}
    text = say("speedup.measured", ratio=est.ratio, low=est.low, high=est.high, rounds=est.rounds)
    if est.low >= need:
        return CheckResult(
            "speedup", PASS, say("speedup.pass", measured=text, need=need), measured, threshold, weight=spec.weight
        )
    parts = [say("speedup.fail", measured=text, need=need)]
    if coverage is not None:
        parts += coverage.parts or [coverage.message]
    if est.high >= need:
        parts.append(say("speedup.noisy"))
    return CheckResult("speedup", FAIL, parts, measured, threshold, weight=spec.weight)

"""Speedup over the FP32 baseline, timed by the grading process itself."""

from __future__ import annotations

from grader.results import FAIL, NOT_APPLICABLE, PASS, CheckResult


def not_applicable(spec, device_kind: str) -> CheckResult:
    return CheckResult("speedup", NOT_APPLICABLE, f"this exercise sets no speedup threshold for {device_kind}: "
                       "not applicable here (speedups are graded on CUDA)", weight=spec.weight)


def check(spec, device_kind: str, timing, coverage_message: str | None) -> CheckResult:
    need = spec.min_speedup[device_kind]
    est = timing.estimate
    measured = {"speedup": round(est.ratio, 3), "ci95_low": round(est.low, 3), "ci95_high": round(est.high, 3),
                "rounds": est.rounds, "steps_per_block": timing.steps_per_block,
                "timed_s": round(timing.elapsed_s, 2)}
    threshold = {"min_speedup": need}
    text = f"{est.ratio:.2f}x faster than FP32 (95% interval {est.low:.2f}x to {est.high:.2f}x over {est.rounds} rounds)"
    if est.low >= need:
        return CheckResult("speedup", PASS, f"{text}; at least {need:.2f}x needed", measured, threshold,
                           weight=spec.weight)
    why = f" {coverage_message}" if coverage_message else ""
    if est.high >= need:
        why += (" The interval includes the threshold: the measurement was too noisy to be sure; "
                "grade again on a quieter machine.")
    return CheckResult("speedup", FAIL, f"{text}; the lower bound must reach {need:.2f}x.{why}", measured, threshold,
                       weight=spec.weight)

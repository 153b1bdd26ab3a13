"""Speedup over the FP32 baseline, timed by the grading process itself."""

from __future__ import annotations

from grader.lesson.check_specs import threshold_for
from grader.results import FAIL, NOT_APPLICABLE, PASS, CheckResult
from grader.wording.catalog import say


def not_applicable(spec, device_kind: str, why: str | None = None) -> CheckResult:
    """`why`: a CPU that the lesson would time if its 16-bit matmuls were fast says why they are not."""
    said = say("speedup.not_applicable_cpu", why=why) if why else say("speedup.not_applicable", device=device_kind)
    return CheckResult("speedup", NOT_APPLICABLE, said, weight=spec.weight)


MORE_THAN_ONE_CORE = 1.2  # cores kept busy on average above which a CPU submission is told its threads bought nothing


def measured_speedup(timing) -> tuple:
    """The estimate per core (grader/judge/timing.py), the figures for the result, and what to tell a submission
    that kept several cores busy."""
    est = timing.per_core()
    measured = {
        "speedup": round(est.ratio, 3),
        "ci95_low": round(est.low, 3),
        "ci95_high": round(est.high, 3),
        "rounds": est.rounds,
        "steps_per_block": timing.steps_per_block,
        "timed_s": round(timing.elapsed_s, 2),
    }
    cores = timing.cores("submission")
    if cores is not None:
        measured["cores"] = round(cores, 2)
    told = [say("speedup.cores", cores=cores)] if cores is not None and cores > MORE_THAN_ONE_CORE else []
    return est, measured, told


def check(spec, device_kind: str, timing, coverage=None) -> CheckResult:
    """`coverage` is a failed coverage check, whose message explains a missing speedup. `device_kind` is the kind
    thresholds are looked up by (cuda, cpu_amx, cpu)."""
    need = threshold_for(spec.min_speedup, device_kind)
    est, measured, cores = measured_speedup(timing)
    threshold = {"min_speedup": need}
    text = say("speedup.measured", ratio=est.ratio, low=est.low, high=est.high, rounds=est.rounds)
    if est.low >= need:
        return CheckResult(
            "speedup", PASS, say("speedup.pass", measured=text, need=need), measured, threshold, weight=spec.weight
        )
    parts = [say("speedup.fail", measured=text, need=need)] + cores
    if coverage is not None:
        parts += coverage.parts or [coverage.message]
    if est.high >= need:
        parts.append(say("speedup.noisy"))
    return CheckResult("speedup", FAIL, parts, measured, threshold, weight=spec.weight)

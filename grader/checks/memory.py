"""Memory over the whole run against the FP32 baseline: the peak of each
measured step plus whatever earlier steps left alive, and a leak diagnosis
when every step keeps more memory than the one before."""

from __future__ import annotations

from grader.results import FAIL, NOT_APPLICABLE, PASS, CheckResult, finding
from grader.wording.catalog import say
from grader.wording.phrases import amount

# What one step may leave allocated and still count as keeping nothing: the returned loss and the
# scaler's bookkeeping are a few bytes; a kept output, loss graph or activation is kilobytes to megabytes.
LEAK_BYTES = 4096


def not_applicable(spec, device_kind: str) -> CheckResult:
    return CheckResult("memory", NOT_APPLICABLE, say("memory.not_applicable", device=device_kind), weight=spec.weight)


def whole_run_peak(steps: list[dict]) -> int:
    """The largest peak of any measured step, counting what the measured steps before it left alive."""
    carried, peak = 0, 0
    for step in steps:
        peak = max(peak, step["peak_bytes"] + carried)
        carried += max(step["retained_bytes"], 0)
    return peak


def leaks(steps: list[dict]) -> bool:
    return len(steps) >= 2 and all(s["retained_bytes"] > LEAK_BYTES for s in steps)


def check(spec, device_kind: str, sub_steps: list[dict] | None, base_steps: list[dict] | None) -> CheckResult:
    limit = spec.max_ratio.get(device_kind)
    if limit is None:
        return not_applicable(spec, device_kind)
    if not sub_steps or not base_steps:
        return CheckResult("memory", "error", say("memory.unmeasured"), weight=spec.weight)
    sub_peak, base_peak = whole_run_peak(sub_steps), whole_run_peak(base_steps)
    ratio = sub_peak / base_peak
    kept = [s["retained_bytes"] for s in sub_steps]
    measured = {
        "peak_bytes": sub_peak,
        "baseline_peak_bytes": base_peak,
        "ratio": round(ratio, 4),
        "retained_bytes_per_step": kept,
        "steps_measured": len(sub_steps),
        "method": "max_memory_allocated" if device_kind == "cuda" else "profiler live bytes",
    }
    threshold = {"max_ratio": limit, "max_retained_bytes_per_step": LEAK_BYTES}
    if leaks(sub_steps):
        grow = amount(sum(kept) / len(kept))
        return CheckResult(
            "memory",
            FAIL,
            say("memory.leak", grow=grow, steps=len(kept)),
            measured,
            threshold,
            [finding("memory_leak", grow=grow)],
            weight=spec.weight,
        )
    figures = {"peak": amount(sub_peak), "ratio": ratio, "base": amount(base_peak), "limit": limit}
    if ratio <= limit:
        return CheckResult("memory", PASS, say("memory.pass", **figures), measured, threshold, weight=spec.weight)
    return CheckResult("memory", FAIL, say("memory.fail", **figures), measured, threshold, weight=spec.weight)

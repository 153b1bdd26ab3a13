"""Memory over the whole run against the FP32 baseline: the peak of each
measured step plus whatever earlier steps left alive, and a leak diagnosis
when every step keeps more memory than the one before."""

from __future__ import annotations

from grader.results import FAIL, NOT_APPLICABLE, PASS, CheckResult, Finding
from grader.wording import size

# What one step may leave allocated and still count as keeping nothing: the returned loss and the
# scaler's bookkeeping are a few bytes; a kept output, loss graph or activation is kilobytes to megabytes.
LEAK_BYTES = 4096


def not_applicable(spec, device_kind: str) -> CheckResult:
    return CheckResult("memory", NOT_APPLICABLE, f"this exercise sets no memory threshold for {device_kind}: "
                       "not applicable here", weight=spec.weight)


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
        return CheckResult("memory", "error", "peak memory could not be measured", weight=spec.weight)
    sub_peak, base_peak = whole_run_peak(sub_steps), whole_run_peak(base_steps)
    ratio = sub_peak / base_peak
    kept = [s["retained_bytes"] for s in sub_steps]
    measured = {"peak_bytes": sub_peak, "baseline_peak_bytes": base_peak, "ratio": round(ratio, 4),
                "retained_bytes_per_step": kept, "steps_measured": len(sub_steps),
                "method": "max_memory_allocated" if device_kind == "cuda" else "profiler live bytes"}
    threshold = {"max_ratio": limit, "max_retained_bytes_per_step": LEAK_BYTES}
    if leaks(sub_steps):
        grow = sum(kept) / len(kept)
        return CheckResult("memory", FAIL, f"live memory grew by about {size(grow)} at every step "
                           f"({len(kept)} steps measured): the code keeps tensors from one step to the next, so a "
                           "long training run runs out of memory", measured, threshold,
                           [Finding("memory_leak", f"each step left {size(grow)} allocated after it returned: "
                                    "tensors (an output, a loss with its graph, activations) are kept across steps",
                                    "keep plain numbers across steps (loss.item()), not tensors; do not append "
                                    "outputs or losses to a list that outlives the step")], weight=spec.weight)
    if ratio <= limit:
        return CheckResult("memory", PASS, f"peak memory {size(sub_peak)} is {ratio:.0%} of the FP32 baseline's "
                           f"{size(base_peak)} (at most {limit:.0%} allowed)", measured, threshold, weight=spec.weight)
    return CheckResult("memory", FAIL, f"peak memory {size(sub_peak)} is {ratio:.0%} of the FP32 baseline's "
                       f"{size(base_peak)}; at most {limit:.0%} is allowed. Activations dominate: run the forward "
                       "under autocast, recompute activations with torch.utils.checkpoint, free gradients with "
                       "zero_grad(set_to_none=True), and do not keep tensors that hold the graph",
                       measured, threshold, weight=spec.weight)

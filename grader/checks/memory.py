"""Peak memory of the submission's step against the FP32 baseline's."""

from __future__ import annotations

from grader.results import FAIL, NOT_APPLICABLE, PASS, CheckResult


def not_applicable(spec, device_kind: str) -> CheckResult:
    return CheckResult("memory", NOT_APPLICABLE, f"this exercise sets no memory threshold for {device_kind}: "
                       "not applicable here", weight=spec.weight)


def check(spec, device_kind: str, sub_peak: int | None, base_peak: int | None) -> CheckResult:
    limit = spec.max_ratio.get(device_kind)
    if limit is None:
        return not_applicable(spec, device_kind)
    if not sub_peak or not base_peak:
        return CheckResult("memory", "error", "peak memory could not be measured", weight=spec.weight)
    ratio = sub_peak / base_peak
    measured = {"peak_bytes": sub_peak, "baseline_peak_bytes": base_peak, "ratio": round(ratio, 4),
                "method": "max_memory_allocated" if device_kind == "cuda" else "profiler live bytes"}
    threshold = {"max_ratio": limit}
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    if ratio <= limit:
        return CheckResult("memory", PASS, f"peak memory {mib(sub_peak)} is {ratio:.0%} of the FP32 baseline's "
                           f"{mib(base_peak)} (at most {limit:.0%} allowed)", measured, threshold, weight=spec.weight)
    return CheckResult("memory", FAIL, f"peak memory {mib(sub_peak)} is {ratio:.0%} of the FP32 baseline's "
                       f"{mib(base_peak)}; at most {limit:.0%} is allowed. Activations dominate: run the forward "
                       "under autocast, recompute activations with torch.utils.checkpoint, free gradients with "
                       "zero_grad(set_to_none=True), and do not keep tensors that hold the graph",
                       measured, threshold, weight=spec.weight)

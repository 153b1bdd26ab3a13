"""The share of matmul/conv FLOPs that ran in 16-bit. Deterministic, so it
works on CPU, and it explains a missing speedup by naming the layers that
stayed in float32."""

from __future__ import annotations

from grader.results import FAIL, PASS, CheckResult, Finding

LOW = ("float16", "bfloat16")


def fp32_modules(by_module: dict[str, dict[str, int]], total: int) -> list[tuple[str, float]]:
    rows = []
    for name, flops in by_module.items():
        high = sum(v for k, v in flops.items() if k not in LOW)
        if high and total:
            rows.append((name, high / total))
    return sorted(rows, key=lambda r: -r[1])


# Weights trained with 16-bit matmuls drift from the FP32 run by 1e-4 (float16) to 1e-3 (bfloat16) after a few
# steps; FP32 arithmetic stays within ~1e-7. Closer than this means the matmuls were float32 whatever was reported.
FP32_LIKE = 1e-5


def check(spec, coverage: dict | None, describe_module, param_dev: float | None = None) -> CheckResult:
    if not coverage or not coverage["flops"]:
        return CheckResult("coverage", FAIL, "no matmul or convolution ran during the traced step",
                           {"fraction_16bit": 0.0}, {"min_fraction": spec.min_fraction}, weight=spec.weight)
    total = sum(coverage["flops"].values())
    low = sum(v for k, v in coverage["flops"].items() if k in LOW)
    fraction = low / total
    measured = {"fraction_16bit": round(fraction, 4), "flops_by_dtype": coverage["flops"], "total_flops": total}
    threshold = {"min_fraction": spec.min_fraction}
    if fraction >= spec.min_fraction and param_dev is not None and param_dev < FP32_LIKE:
        return CheckResult("coverage", FAIL, "the trained weights are identical to the FP32 run's (off by "
                           f"{param_dev:.1e}), which 16-bit matmuls cannot give: the 16-bit work that was "
                           "reported did not happen", {**measured, "param_rel_diff_vs_fp32": param_dev}, threshold,
                           [Finding("numbers_fp32", "the numbers show float32 arithmetic",
                                    "run the forward pass under torch.autocast, and do not patch the grader")],
                           weight=spec.weight)
    if fraction >= spec.min_fraction:
        return CheckResult("coverage", PASS, f"{fraction:.0%} of the matmul FLOPs ran in 16-bit", measured, threshold,
                           weight=spec.weight)
    if low == 0:
        return CheckResult("coverage", FAIL, "every matmul ran in float32: nothing ran under autocast with a "
                           "16-bit dtype", measured, threshold, [Finding(
                               "no_16bit_matmul", "no matmul or convolution ran in 16-bit",
                               "run the forward pass inside torch.autocast(device_type=..., dtype=amp_dtype)")],
                           weight=spec.weight)
    culprits = fp32_modules(coverage["by_module"], total)
    findings = [Finding("fp32_layer", f"{describe_module(name)} ran in float32 ({share:.0%} of the matmul FLOPs)",
                        "run it inside the autocast block (and do not cast its input back to float32)")
                for name, share in culprits[:5] if name != "(backward or outside the model)"]
    where = "; ".join(f.message for f in findings[:3]) or "the backward pass ran in float32"
    return CheckResult("coverage", FAIL, f"only {fraction:.0%} of the matmul FLOPs ran in 16-bit "
                       f"(at least {spec.min_fraction:.0%} expected): {where}", measured, threshold, findings,
                       weight=spec.weight)

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


def fp32_numbers(closeness: dict | None) -> bool:
    """The grader also runs the trusted reference (real mixed precision) in a process of its own. The
    16-bit rounding moves that run away from the FP32 run in one particular direction; a submission that
    did its matmuls in 16-bit moves the same way (`toward_amp` near 1), one that trained in float32 and
    nudged its weights does not (near 0), since that direction cannot be had without the 16-bit work.
    Only judged where the submission ended near the FP32 run: a far-off one fails parity instead."""
    return (closeness is not None and closeness["amp_vs_fp32"] > 0 and closeness["to_fp32"] <= closeness["near"]
            and closeness["toward_amp"] < 0.5)


def check(spec, coverage: dict | None, describe_module, closeness: dict | None = None) -> CheckResult:
    if not coverage or not coverage["flops"]:
        return CheckResult("coverage", FAIL, "no matmul or convolution ran during the traced step",
                           {"fraction_16bit": 0.0}, {"min_fraction": spec.min_fraction}, weight=spec.weight)
    total = sum(coverage["flops"].values())
    low = sum(v for k, v in coverage["flops"].items() if k in LOW)
    fraction = low / total
    measured = {"fraction_16bit": round(fraction, 4), "flops_by_dtype": coverage["flops"], "total_flops": total}
    if closeness is not None:
        measured.update({f"distance_{k}": round(v, 6) for k, v in closeness.items()})
    threshold = {"min_fraction": spec.min_fraction}
    if fraction >= spec.min_fraction and fp32_numbers(closeness):
        return CheckResult("coverage", FAIL, "the trained weights did not move the way 16-bit arithmetic moves "
                           f"them: measured from the FP32 run, they went {closeness['toward_amp']:.0%} of the way "
                           "toward a real mixed-precision run (a real one goes about 100%). The 16-bit work that "
                           "was reported did not happen",
                           measured, threshold,
                           [Finding("numbers_fp32", "the numbers show float32 arithmetic",
                                    "run the forward pass under torch.autocast with amp_dtype, and do not patch "
                                    "the grader")],
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

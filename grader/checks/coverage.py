"""The share of matmul/conv FLOPs that ran in 16-bit. Deterministic, so it
works on CPU, and it explains a missing speedup by naming the layers that
stayed in float32."""

from __future__ import annotations

from grader.results import FAIL, NOT_APPLICABLE, PASS, CheckResult, finding
from grader.wording.catalog import say
from grader.worker.census import LOW
from grader.worker.precision import OUTSIDE_MODEL


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
    return (
        closeness is not None
        and closeness["amp_vs_fp32"] > 0
        and closeness["to_fp32"] <= closeness["near"]
        and closeness["toward_amp"] < 0.5
    )


def compared_like(flops: dict[str, int], amp_dtype: str | None, fp8_lesson: bool = False) -> bool:
    """The direction test compares with a trusted run in `amp_dtype`. A submission whose 16-bit work ran mostly
    in the other dtype (a hard-coded float16 where the lesson runs bfloat16) rounds another way: float16 rounds
    closer to float32 than bfloat16, so it would look like float32 arithmetic when it is not. Its wrong dtype is
    call_order's autocast_wrong_dtype; this check does not also claim its 16-bit work did not happen.
    In an FP8 lesson each recipe (tensorwise, rowwise) rounds its own way, so there is no one trusted direction;
    that is the lesson's property, never the submission's: float8 counts it reports elsewhere change nothing."""
    if amp_dtype is None:
        return True
    if fp8_lesson:
        return False
    low = {k: v for k, v in flops.items() if k in ("float16", "bfloat16")}  # float8 work is the same in both runs
    return not low or max(low, key=low.get) == amp_dtype


def check(
    spec,
    coverage: dict | None,
    describe_module,
    closeness: dict | None = None,
    amp_dtype: str | None = None,
    fp8_lesson: bool = False,
    compiled_emulated_fp8: bool = False,
    policy_lesson: bool = False,
) -> CheckResult:
    """`policy_lesson`: the lesson's mixed precision is FSDP's MixedPrecisionPolicy, where autocast is a mistake
    of its own (fsdp_autocast_over_policy), so the fixes name the policy instead."""
    if compiled_emulated_fp8:  # what the dispatcher sees is no longer what the precision was
        return CheckResult("coverage", NOT_APPLICABLE, say("coverage.fp8_compiled_cpu"), weight=spec.weight)
    if not coverage or not coverage["flops"]:
        return CheckResult(
            "coverage",
            FAIL,
            say("coverage.none"),
            {"fraction_16bit": 0.0},
            {"min_fraction": spec.min_fraction},
            weight=spec.weight,
        )
    total = sum(coverage["flops"].values())
    low = sum(v for k, v in coverage["flops"].items() if k in LOW)
    fraction = low / total
    measured = {"fraction_16bit": round(fraction, 4), "flops_by_dtype": coverage["flops"], "total_flops": total}
    if closeness is not None:
        measured.update({f"distance_{k}": round(v, 6) for k, v in closeness.items()})
    threshold = {"min_fraction": spec.min_fraction}
    if closeness is not None and not compared_like(coverage["flops"], amp_dtype, fp8_lesson):
        measured["direction_test"] = (
            "not judged: the low-precision work ran in another dtype or FP8 recipe than the trusted run's"
        )
        closeness = None
    if fraction >= spec.min_fraction and fp32_numbers(closeness):
        return CheckResult(
            "coverage",
            FAIL,
            say("coverage.fp32_numbers", toward=closeness["toward_amp"]),
            measured,
            threshold,
            [finding("numbers_fp32")],
            weight=spec.weight,
        )
    if fraction >= spec.min_fraction:
        return CheckResult(
            "coverage", PASS, say("coverage.pass", fraction=fraction), measured, threshold, weight=spec.weight
        )
    if low == 0:
        return CheckResult(
            "coverage",
            FAIL,
            say("coverage.all_fp32.policy" if policy_lesson else "coverage.all_fp32"),
            measured,
            threshold,
            [
                finding(
                    "no_16bit_matmul", fix_key="no_16bit_matmul.fix_policy" if policy_lesson else None, dtype=amp_dtype
                )
            ],
            weight=spec.weight,
        )
    culprits = [(name, share) for name, share in fp32_modules(coverage["by_module"], total) if name != OUTSIDE_MODEL][
        :5
    ]
    fix = "fp32_layer.fix_policy" if policy_lesson else None
    findings = [
        finding("fp32_layer", fix_key=fix, layer=describe_module(name), share=share) for name, share in culprits
    ]
    where = [say("fp32_layer", layer=describe_module(name), share=share) for name, share in culprits[:3]]
    return CheckResult(
        "coverage",
        FAIL,
        say("coverage.partial", fraction=fraction, min=spec.min_fraction, where=where or say("coverage.backward_fp32")),
        measured,
        threshold,
        findings,
        weight=spec.weight,
    )

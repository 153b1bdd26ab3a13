"""What the GradScaler does when a step overflows, observed from outside.
After the compared steps the grader runs one more step in which every
parameter's gradient gets an inf, as a float16 backward that overflows
would give. A correct step (scaler.step, then scaler.update) leaves every
weight exactly as it was and backs the scale off. The grader compares the
weights it loaded before and after, and reads the scale itself: a trace can
be faked, skipped steps and a smaller scale cannot without doing the work."""

from __future__ import annotations

import math

import torch

from grader.results import FAIL, PASS, CheckResult, Finding


def changed(before: dict, after: dict) -> list[str]:
    return [k for k, v in before.items() if k not in after or after[k].shape != v.shape
            or not torch.equal(after[k], v)]


def check(spec, step: int, before: dict, after: dict, scale_before: float | None,
          scale_after: float | None) -> CheckResult:
    moved = changed(before, after)
    nan = [k for k in moved if k in after and not bool(torch.isfinite(after[k]).all())]
    measured = {"step": step, "params_changed": len(moved), "params_nonfinite": len(nan),
                "scale_before": scale_before, "scale_after": scale_after}
    findings = []
    if moved:
        what = "became inf/NaN" if nan else "changed"
        findings.append(Finding(
            "overflow_step_applied",
            f"the grader made step {step}'s gradients overflow (inf), and {len(moved)} parameter tensors {what}: "
            "the optimizer stepped with non-finite gradients",
            "step through the scaler, scaler.step(optimizer), which skips a step whose gradients are inf or NaN"))
    if scale_before is None or scale_after is None or not math.isfinite(scale_after):
        findings.append(Finding("scale_unknown", "the GradScaler passed to the function reported no usable scale",
                                "use the scaler argument: scaler.scale(loss).backward(), scaler.step(optimizer), "
                                "scaler.update()"))
    elif not scale_after < scale_before:
        findings.append(Finding(
            "scale_not_backed_off",
            f"after the overflowed step the loss scale stayed at {scale_after:g} instead of backing off",
            "call scaler.update() once per step, after scaler.step(optimizer): it lowers the scale after an "
            "overflow"))
    if findings:
        return CheckResult("overflow", FAIL, "when the gradients overflowed: " + "; ".join(f.message for f in findings),
                           measured, None, findings, weight=spec.weight)
    return CheckResult("overflow", PASS, f"an overflowed step ({step}) changed no weight and the scale backed off "
                       f"from {scale_before:g} to {scale_after:g}", measured, None, weight=spec.weight)

"""Numerical parity with the FP32 baseline: same seed, same data, same number
of steps; the loss trajectory and the final parameters must stay within the
exercise's tolerances for the dtype in use."""

from __future__ import annotations

import math

import torch

from grader.results import ERROR, FAIL, PASS, CheckResult


def loss_deviation(sub: list[float], base: list[float]) -> tuple[float, int]:
    worst, at = 0.0, 0
    for i, (s, b) in enumerate(zip(sub, base)):
        dev = abs(s - b) / max(abs(b), 1e-8)
        if dev > worst:
            worst, at = dev, i
    return worst, at


def param_deviation(sub: dict, base: dict) -> tuple[float, str]:
    worst, name = 0.0, ""
    for key, ref in base.items():
        mine = sub.get(key)
        if mine is None or mine.shape != ref.shape:
            return math.inf, key
        dev = float(torch.linalg.vector_norm((mine - ref).double()) / max(float(torch.linalg.vector_norm(ref.double())), 1e-12))
        if not math.isfinite(dev) or dev > worst:
            worst, name = dev, key
    return worst, name


def check(spec, amp_dtype: str, sub_losses, base_losses, sub_params, base_params) -> CheckResult:
    tol = spec.tolerances.get(amp_dtype)
    if tol is None:
        return CheckResult("parity", ERROR, f"the exercise sets no parity tolerance for {amp_dtype}", weight=spec.weight)
    loss_dev, loss_step = loss_deviation(sub_losses, base_losses)
    param_dev, param_name = param_deviation(sub_params, base_params)
    measured = {"max_loss_rel_diff": round(loss_dev, 6), "at_step": loss_step,
                "max_param_rel_diff": round(param_dev, 6) if math.isfinite(param_dev) else None,
                "worst_param": param_name, "steps": len(sub_losses)}
    threshold = {"loss_rtol": tol.loss_rtol, "param_rtol": tol.param_rtol}
    problems = []
    if loss_dev > tol.loss_rtol:
        problems.append(f"the loss differs from the FP32 run by {loss_dev:.1%} at step {loss_step} "
                        f"(allowed {tol.loss_rtol:.1%}): {sub_losses[loss_step]:.4f} vs {base_losses[loss_step]:.4f}")
    if not param_dev <= tol.param_rtol:
        problems.append(f"after {len(sub_losses)} steps, parameter {param_name!r} differs from the FP32 run by "
                        f"{param_dev:.1%} (allowed {tol.param_rtol:.1%})")
    if problems:
        hint = (" This usually means the update itself is different: a missing zero_grad, a loss that is not "
                "divided for accumulation, a double step, or 16-bit weights.")
        return CheckResult("parity", FAIL, "; ".join(problems) + "." + hint, measured, threshold, weight=spec.weight)
    return CheckResult("parity", PASS, f"matches the FP32 run within tolerance over {len(sub_losses)} steps "
                       f"(loss {loss_dev:.2%}, parameters {param_dev:.2%})", measured, threshold, weight=spec.weight)

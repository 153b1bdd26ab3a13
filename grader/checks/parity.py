"""Numerical parity with the FP32 baseline: same seed, same data, same number
of steps. What is compared is what training *did*: each parameter tensor's
update since the common starting point (p - p0) against the FP32 run's update,
relative to the size of that update. A block that never trains is 100% off
however large its weights are, and mixed precision stays within a few percent.
The per-step losses are compared too."""

from __future__ import annotations

import math

import torch

from grader.results import ERROR, FAIL, PASS, CheckResult, Finding
from grader.schema import localize


GENERIC_ADVICE = ("The training step itself differs: check the learning rate and what scales the gradients "
                  "(clipping, loss division for accumulation, the loss scale), a missing or doubled step or "
                  "zero_grad, and 16-bit weights.")


def loss_deviation(sub: list[float], base: list[float]) -> tuple[float, int]:
    worst, at = 0.0, 0
    for i, (s, b) in enumerate(zip(sub, base)):
        dev = abs(s - b) / max(abs(b), 1e-8)
        if dev > worst:
            worst, at = dev, i
    return worst, at


def _norm(t: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(t.double()))


def _moved(base: torch.Tensor, start: torch.Tensor) -> float:
    """How far FP32 training moved a tensor, floored so a tensor that FP32 leaves (almost) still is compared
    against a small share of its own size rather than divided by zero."""
    return max(_norm(base - start), 1e-4 * _norm(start), 1e-12)


def update_deviations(sub: dict, base: dict, start: dict) -> dict[str, float]:
    """Per tensor: ||(sub - p0) - (base - p0)|| / ||base - p0||, i.e. ||sub - base|| over FP32's own update."""
    out = {}
    for key, ref in base.items():
        mine, p0 = sub.get(key), start.get(key)
        if mine is None or mine.shape != ref.shape or p0 is None or p0.shape != ref.shape:
            out[key] = math.inf
            continue
        dev = _norm(mine - ref) / _moved(ref, p0)
        out[key] = dev if math.isfinite(dev) else math.inf
    return out


def worst(devs: dict[str, float]) -> tuple[float, str]:
    if not devs:
        return 0.0, ""
    name = max(devs, key=lambda k: devs[k])
    return devs[name], name


def trajectory_distance(a: dict, b: dict, base: dict, start: dict) -> float:
    """||a - b|| over all tensors, relative to the whole FP32 update: how far apart two runs ended."""
    num = sum(_norm(a[k] - b[k]) ** 2 for k in base if k in a and k in b and a[k].shape == b[k].shape)
    den = sum(_moved(base[k], start[k]) ** 2 for k in base if k in start)
    return math.sqrt(num / den) if den else math.inf


def toward(sub: dict, target: dict, base: dict) -> float:
    """Where the submission ended along the line from the FP32 run (0) to `target` (1)."""
    keys = [k for k in base if k in sub and k in target and sub[k].shape == base[k].shape == target[k].shape]
    dot = sum(float(((sub[k] - base[k]).double() * (target[k] - base[k]).double()).sum()) for k in keys)
    den = sum(_norm(target[k] - base[k]) ** 2 for k in keys)
    return dot / den if den else 0.0


def did_not_train(sub: dict, start: dict, key: str) -> bool:
    mine, p0 = sub.get(key), start.get(key)
    return mine is not None and p0 is not None and mine.shape == p0.shape and _norm(mine - p0) <= 1e-7 * max(
        _norm(p0), 1e-12)


def owner(name: str, describe) -> str:
    """'0.0.weight' -> 'the first Linear layer (model.0.0, 128->256)'."""
    module = name.rsplit(".", 1)[0] if "." in name else "model"
    return describe(module)


def check(spec, amp_dtype: str, sub_losses, base_losses, sub_params, base_params, start_params,
          describe=lambda module: f"module {module}") -> CheckResult:
    tol = spec.tolerances.get(amp_dtype)
    if tol is None:
        return CheckResult("parity", ERROR, f"the exercise sets no parity tolerance for {amp_dtype}", weight=spec.weight)
    loss_dev, loss_step = loss_deviation(sub_losses, base_losses)
    devs = update_deviations(sub_params, base_params, start_params)
    update_dev, name = worst(devs)
    measured = {"max_loss_rel_diff": round(loss_dev, 6), "at_step": loss_step,
                "max_update_rel_diff": round(update_dev, 6) if math.isfinite(update_dev) else None,
                "worst_param": name, "steps": len(sub_losses),
                "update_rel_diff": {k: (round(v, 6) if math.isfinite(v) else None) for k, v in devs.items()}}
    threshold = {"loss_rtol": tol.loss_rtol, "update_rtol": tol.update_rtol}
    problems, findings = [], []
    if loss_dev > tol.loss_rtol:
        problems.append(f"the loss differs from the FP32 run by {loss_dev:.1%} at step {loss_step} "
                        f"(allowed {tol.loss_rtol:.1%}): {sub_losses[loss_step]:.4f} vs {base_losses[loss_step]:.4f}")
    if not update_dev <= tol.update_rtol:
        # An untrained tensor is off by exactly 100%, which others (pushed further by a wrong step) can exceed:
        # look for one among all that are off, not only the worst.
        frozen = [k for k, v in devs.items() if not v <= tol.update_rtol and did_not_train(sub_params, start_params, k)]
        name = frozen[0] if frozen else name
        where = f"{name!r}, in {owner(name, describe)}"
        if frozen:
            problems.append(f"parameter {where} did not change at all in {len(sub_losses)} steps, while FP32 "
                            "training moved it: no gradient reached it, or the optimizer never updated it")
            findings.append(Finding("block_not_trained", f"{owner(name, describe)} never trained",
                                    "make sure every block gets a gradient (e.g. use_reentrant=False with "
                                    "checkpointing, no requires_grad_(False), no torch.no_grad() around the "
                                    "forward) and that the optimizer steps every effective batch"))
        else:
            off = [k for k, v in devs.items() if not v <= tol.update_rtol]
            problems.append(f"after {len(sub_losses)} steps, the update of parameter {where} is "
                            f"{update_dev:.1%} away from the FP32 run's update (allowed {tol.update_rtol:.1%}; "
                            f"{len(off)} of {len(devs)} tensors are off)")
    if problems:
        hint = " " + (localize(spec.advice) if spec.advice else GENERIC_ADVICE)
        return CheckResult("parity", FAIL, "; ".join(problems) + "." + hint, measured, threshold, findings,
                           weight=spec.weight)
    return CheckResult("parity", PASS, f"matches the FP32 run within tolerance over {len(sub_losses)} steps "
                       f"(loss {loss_dev:.2%}, update {update_dev:.2%})", measured, threshold, weight=spec.weight)

"""Numerical parity with the FP32 baseline: same seed, same data, same number
of steps. What is compared is what training *did*: each parameter tensor's
update since the common starting point (p - p0) against the FP32 run's update,
relative to the size of that update. A block that never trains is 100% off
however large its weights are, and mixed precision stays within a few percent.
The per-step losses are compared too."""

from __future__ import annotations

import math

import torch

from grader.results import ERROR, FAIL, PASS, CheckResult, finding
from grader.wording.catalog import own, say


def loss_deviation(sub: list[float], base: list[float], floor: float = 1e-8) -> tuple[float, int]:
    """The worst |sub - base| / |base| over the steps; `floor` bounds the divisor from below, where a loss that
    training drives towards zero would turn rounding differences into large relative ones."""
    worst, at = 0.0, 0
    for i, (s, b) in enumerate(zip(sub, base)):
        dev = abs(s - b) / max(abs(b), floor, 1e-8)
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
    return (
        mine is not None
        and p0 is not None
        and mine.shape == p0.shape
        and _norm(mine - p0) <= 1e-7 * max(_norm(p0), 1e-12)
    )


def owner(name: str, describe):
    """'0.0.weight' -> 'the first Linear layer (model.0.0, 128->256)' (a message, see grader/wording/layers.py)."""
    module = name.rsplit(".", 1)[0] if "." in name else "model"
    return describe(module)


def _advice(spec, updates_match: bool):
    """What to look at. The lesson's advice, like the generic one, names what makes the update differ; where every
    update matches and only the loss the step returns is off, that would send the learner after a bug the
    weights show is not there."""
    if updates_match:
        return say("parity.advice.loss_only")
    return own(spec.advice) if spec.advice else say("parity.advice")


def check(
    spec,
    amp_dtype: str,
    sub_losses,
    base_losses,
    sub_params,
    base_params,
    start_params,
    describe=lambda module: say("layer.module", name=module),
    steps: list[int] | None = None,
    ran: int | None = None,
    stale_optimizer: bool = False,
) -> CheckResult:
    """`steps`: the step number of each compared loss (an overflowed step's loss is left out, so the losses are not
    all the steps); `ran`: how many steps ran, the steps the updates were made over. `stale_optimizer`: the
    learner's optimizer was shown to hold tensors the model does not train with, which explains a frozen layer."""
    steps = list(range(len(sub_losses))) if steps is None else steps
    ran = len(sub_losses) if ran is None else ran
    tol = spec.tolerances.get(amp_dtype)
    if tol is None:
        return CheckResult("parity", ERROR, say("parity.no_tolerance", dtype=amp_dtype), weight=spec.weight)
    loss_dev, loss_step = loss_deviation(sub_losses, base_losses)
    devs = update_deviations(sub_params, base_params, start_params)
    update_dev, name = worst(devs)
    measured = {
        "max_loss_rel_diff": round(loss_dev, 6),
        "at_step": steps[loss_step] if loss_step < len(steps) else loss_step,
        "max_update_rel_diff": round(update_dev, 6) if math.isfinite(update_dev) else None,
        "worst_param": name,
        "steps": ran,
        "loss_steps": len(sub_losses),
        "update_rel_diff": {k: (round(v, 6) if math.isfinite(v) else None) for k, v in devs.items()},
    }
    threshold = {"loss_rtol": tol.loss_rtol, "update_rtol": tol.update_rtol}
    problems, findings = [], []
    if loss_dev > tol.loss_rtol:
        problems.append(
            say(
                "parity.loss",
                dev=loss_dev,
                step=measured["at_step"],
                tol=tol.loss_rtol,
                mine=sub_losses[loss_step],
                base=base_losses[loss_step],
            )
        )
    if not update_dev <= tol.update_rtol:
        # An untrained tensor is off by exactly 100%, which others (pushed further by a wrong step) can exceed:
        # look for one among all that are off, not only the worst.
        frozen = [k for k, v in devs.items() if not v <= tol.update_rtol and did_not_train(sub_params, start_params, k)]
        name = frozen[0] if frozen else name
        layer = owner(name, describe)
        if frozen:
            problems.append(say("parity.frozen", name=name, layer=layer, steps=ran))
            fix = "block_not_trained.fix_optimizer" if stale_optimizer else None
            findings.append(finding("block_not_trained", fix_key=fix, layer=layer))
        else:
            off = [k for k, v in devs.items() if not v <= tol.update_rtol]
            problems.append(
                say(
                    "parity.update",
                    steps=ran,
                    name=name,
                    layer=layer,
                    dev=update_dev,
                    tol=tol.update_rtol,
                    off=len(off),
                    total=len(devs),
                )
            )
    if problems:
        advice = _advice(spec, updates_match=update_dev <= tol.update_rtol)
        return CheckResult(
            "parity",
            FAIL,
            say("parity.fail", problems=problems, advice=advice),
            measured,
            threshold,
            findings,
            weight=spec.weight,
        )
    return CheckResult(
        "parity",
        PASS,
        say(
            "parity.pass" if len(sub_losses) == ran else "parity.pass.skipped",
            steps=ran,
            compared=len(sub_losses),
            loss=loss_dev,
            update=update_dev,
        ),
        measured,
        threshold,
        weight=spec.weight,
    )

"""The gradient norm of each model after a step, asked for by `grader tune` of a trusted run (the FP32 baseline,
the reference): what sizing a lesson's workload needs to see, beside the loss. After a step the gradients that
stay on the parameters are the step's own (a step starts with zero_grad); a model without any says 0."""

from __future__ import annotations

import math

import torch


def gradient_norms(models: dict) -> dict[str, float]:
    out = {}
    for name, model in models.items():
        grads = [p.grad.detach().float() for p in model.parameters() if p.grad is not None]
        out[name] = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))) if grads else 0.0
    return out


def total_norm(models) -> float | None:
    """The norm of every gradient the models hold, this process's shard of a sharded one (a DTensor's local
    part: no collective, and a ratio of two norms is the same on every shard). None where there is none."""
    grads = []
    for model in models:
        for p in model.parameters():
            if p.grad is not None:
                g = p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad
                grads.append(torch.linalg.vector_norm(g.detach().float()))
    return float(torch.linalg.vector_norm(torch.stack(grads))) if grads else None


def reached(models, accumulated: float | None) -> float | None:
    """How many times the accumulated gradient (its norm right after the last backward) the gradients are now,
    where they reach a clip or the optimizer: 1/S after a GradScaler's unscale_, 1/S/N where the learner also
    divided them by N. A measure of what the optimizer gets, whatever expression the loss was; None where either
    norm is zero or not finite (an overflowed step)."""
    now = total_norm(models) if accumulated else None
    if now is None or not math.isfinite(now) or not math.isfinite(accumulated):
        return None
    return now / accumulated

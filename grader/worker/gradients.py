"""The gradient norm of each model after a step, asked for by `grader tune` of a trusted run (the FP32 baseline,
the reference): what sizing a lesson's workload needs to see, beside the loss. After a step the gradients that
stay on the parameters are the step's own (a step starts with zero_grad); a model without any says 0."""

from __future__ import annotations

import torch


def gradient_norms(models: dict) -> dict[str, float]:
    out = {}
    for name, model in models.items():
        grads = [p.grad.detach().float() for p in model.parameters() if p.grad is not None]
        out[name] = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))) if grads else 0.0
    return out

"""Builds the seeded training problem of an exercise. Both the baseline process
and the submission process call these with the same spec, so they start from
bit-identical weights and see bit-identical batches without sharing files.

The problem is sized to *learn* within the few graded steps: a grader can only
tell a step that trains from one that does not when training visibly moves the
loss and every layer's weights."""

from __future__ import annotations

import torch
from torch import nn

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def build_model(spec: dict, seed: int) -> nn.Module:
    """Hidden layers get He initialisation (zero biases) so a deep stack passes signal and gradient through
    from the first step; PyTorch's default init shrinks both with depth and a deep MLP barely trains in 8 steps."""
    torch.manual_seed(seed)
    act = {"relu": nn.ReLU, "gelu": nn.GELU}[spec["activation"]]
    sizes = [spec["in_features"], *spec["hidden"]]
    blocks = [nn.Sequential(nn.Linear(a, b), act()) for a, b in zip(sizes, sizes[1:])]
    blocks.append(nn.Linear(sizes[-1], spec["out_features"]))
    for block in blocks[:-1]:
        nn.init.kaiming_normal_(block[0].weight, nonlinearity="relu")
        nn.init.zeros_(block[0].bias)
    if spec.get("sequential_blocks", True):
        return nn.Sequential(*blocks)
    return nn.Sequential(*[m for block in blocks for m in (block if isinstance(block, nn.Sequential) else [block])])


def initial_state(spec: dict, seed: int) -> dict[str, torch.Tensor]:
    """The weights every run starts from, rebuilt in the grading process: the reference point of 'what
    training changed'. It never comes from a worker, so a submission cannot move it."""
    return {k: v.detach().float().clone() for k, v in build_model(spec, seed).state_dict().items()}


def build_optimizer(spec: dict, params) -> torch.optim.Optimizer:
    if spec["kind"] == "sgd":
        return torch.optim.SGD(params, lr=spec["lr"], momentum=spec["momentum"], weight_decay=spec["weight_decay"])
    return torch.optim.AdamW(params, lr=spec["lr"], weight_decay=spec["weight_decay"])


class Batches:
    """Deterministic synthetic classification data: a Gaussian mixture with one centre per class.
    `separation` scales the centres against unit noise: large enough that the loss falls clearly within
    the graded steps, small enough that each sample (and each micro-batch) moves the gradient."""

    def __init__(self, workload: dict, device: torch.device):
        self.seed = workload["seed"]
        self.model = workload["model"]
        self.data = workload["data"]
        self.device = device
        gen = torch.Generator().manual_seed(self.seed + 7919)
        self.centres = self.data.get("separation", 1.0) * torch.randn(
            self.model["out_features"], self.model["in_features"], generator=gen)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        y = torch.randint(0, self.centres.shape[0], (self.data["batch_size"],), generator=gen)
        x = self.centres[y] + torch.randn(y.shape[0], self.centres.shape[1], generator=gen)
        return x.to(self.device), y.to(self.device)

    def micro_batches(self, step: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        x, y = self.batch(step)
        n = self.data["micro_batches"]
        return list(zip(x.chunk(n), y.chunk(n)))


def step_arguments(params: list[str], *, model, optimizer, scaler, batches: Batches, step: int,
                   device_type: str, amp_dtype: torch.dtype) -> list:
    """The positional arguments of the learner's entrypoint, by documented name."""
    available = {
        "model": lambda: model,
        "optimizer": lambda: optimizer,
        "scaler": lambda: scaler,
        "inputs": lambda: batches.batch(step)[0],
        "targets": lambda: batches.batch(step)[1],
        "micro_batches": lambda: batches.micro_batches(step),
        "device_type": lambda: device_type,
        "amp_dtype": lambda: amp_dtype,
    }
    if "inputs" in params and "targets" in params:
        x, y = batches.batch(step)
        available["inputs"], available["targets"] = (lambda: x), (lambda: y)
    return [available[name]() for name in params]

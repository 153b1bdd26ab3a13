"""Builds the seeded training problem of an exercise. Both the baseline process
and the submission process call these with the same spec, so they start from
bit-identical weights and see bit-identical batches without sharing files."""

from __future__ import annotations

import torch
from torch import nn

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def build_model(spec: dict, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    act = {"relu": nn.ReLU, "gelu": nn.GELU}[spec["activation"]]
    sizes = [spec["in_features"], *spec["hidden"]]
    blocks = [nn.Sequential(nn.Linear(a, b), act()) for a, b in zip(sizes, sizes[1:])]
    blocks.append(nn.Linear(sizes[-1], spec["out_features"]))
    if spec.get("sequential_blocks", True):
        return nn.Sequential(*blocks)
    return nn.Sequential(*[m for block in blocks for m in (block if isinstance(block, nn.Sequential) else [block])])


def build_optimizer(spec: dict, params) -> torch.optim.Optimizer:
    if spec["kind"] == "sgd":
        return torch.optim.SGD(params, lr=spec["lr"], momentum=spec["momentum"], weight_decay=spec["weight_decay"])
    return torch.optim.AdamW(params, lr=spec["lr"], weight_decay=spec["weight_decay"])


class Batches:
    """Deterministic synthetic classification data: inputs are Gaussian, labels
    come from a fixed random 'teacher', so the loss really goes down."""

    def __init__(self, workload: dict, device: torch.device):
        self.seed = workload["seed"]
        self.model = workload["model"]
        self.data = workload["data"]
        self.device = device
        gen = torch.Generator().manual_seed(self.seed + 7919)
        self.teacher = torch.randn(self.model["in_features"], self.model["out_features"], generator=gen)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        x = torch.randn(self.data["batch_size"], self.model["in_features"], generator=gen)
        y = (x @ self.teacher + 0.5 * torch.randn(x.shape[0], self.teacher.shape[1], generator=gen)).argmax(dim=1)
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


"""The worker's PrecisionMode (grader/worker/precision.py): whose matmuls its FLOPs are counted as, and what it
notes of a custom autograd Function's forward."""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from grader.worker.precision import OUTSIDE_MODEL, PrecisionMode


class _Recorder:
    def __init__(self, path):
        self.path, self.active, self.events = path, True, []

    def autocast_on(self):
        return torch.is_autocast_enabled("cpu")

    def emit(self, kind, **fields):
        self.events.append({"ev": kind, **fields})


def _counted(model, step, path=__file__):
    names = {id(m): name for name, m in model.named_modules() if name}
    mode = PrecisionMode(_Recorder(path), names)
    mode.attach(model)
    try:
        with mode:
            step()
    finally:
        mode.detach()
    return mode


def test_a_checkpointed_float32_block_is_blamed_for_its_own_matmuls_not_for_a_stopped_recomputation():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.GELU()) for _ in range(3)], nn.Linear(16, 4))
    inputs = torch.randn(8, 16)

    def step():
        hidden = checkpoint(model[0], inputs, use_reentrant=False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            for block in model[1:3]:
                hidden = checkpoint(block, hidden, use_reentrant=False)
            loss = model[3](hidden).float().pow(2).mean()
        loss.backward()

    mode = _counted(model, step)
    float32 = {name for name, flops in mode.by_module.items() if flops.get("float32")}
    assert float32 == {"0.0"}, mode.by_module  # forward, recomputed forward and both gradients of block 0
    assert not any(name.endswith(".1") for name in mode.by_module), mode.by_module  # no GELU runs a matmul
    assert OUTSIDE_MODEL not in mode.by_module, mode.by_module  # every backward matmul has a weight's owner


class _Norm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        rms = x.float().pow(2).mean(-1, keepdim=True).rsqrt()
        return (x.float() * rms).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_a_functions_reductions_are_noted_with_the_dtype_they_ran_in_not_the_one_it_returns():
    model = nn.Linear(8, 8)
    inputs = torch.randn(4, 8)
    seen = {}

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            seen["out"] = _Norm.apply(model(inputs))
            seen["out"].float().sum()  # a reduction outside the Function: not the Function's

    mode = _counted(model, step)
    assert seen["out"].dtype == torch.bfloat16
    ops = [e for e in mode.recorder.events if e["ev"] == "function_op"]
    assert [(e["function"], e["op"], e["dtype"]) for e in ops] == [("_Norm", "mean", "float32")]


def test_a_backward_matmul_whose_operands_lead_to_two_modules_is_blamed_on_neither():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 16), nn.Linear(16, 16, bias=False))
    tokens = torch.randint(0, 10, (8,))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = model[0](tokens)
        model[1](hidden).pow(2).mean().backward()  # the Linear runs in float32, forward and backward

    mode = _counted(model, step)
    assert "0" not in mode.by_module, mode.by_module  # the Embedding runs no matmul
    assert set(mode.by_module) == {"1", OUTSIDE_MODEL}, mode.by_module  # its forward; the backward is ambiguous

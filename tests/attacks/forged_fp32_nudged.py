# attack: train in float32, forge a perfect trace and all FLOPs in bfloat16, then nudge every weight off the
#         FP32 run by about the size of bfloat16 rounding, so the weights are neither identical to FP32's nor far
# applies: all
# expect: fail
import gc

import torch
import torch.nn.functional as F

from grader.worker import tracing

START = {}


def forge():
    for obj in gc.get_objects():
        if isinstance(obj, tracing.PrecisionMode):
            total = sum(obj.flops.values())
            obj.flops.clear()
            obj.flops["bfloat16"] = total
            for by_dtype in obj.by_module.values():
                moved = sum(by_dtype.values())
                by_dtype.clear()
                by_dtype["bfloat16"] = moved
        elif isinstance(obj, tracing.Recorder):
            for event in obj.events:
                if event["ev"] in ("forward", "loss_op"):
                    event.update(autocast=True, dtype="bfloat16")
            obj.events[:0] = [{"ev": "autocast_enter", "line": 40, "device_type": "cpu", "dtype": "bfloat16",
                               "enabled": True, "deprecated": False}]
            index = next(i for i, e in enumerate(obj.events) if e["ev"] == "backward")
            obj.events.insert(index, {"ev": "autocast_exit", "line": 40, "device_type": "cpu"})


def nudge(model):
    gen = torch.Generator().manual_seed(len(START))
    with torch.no_grad():
        for name, p in model.named_parameters():
            START.setdefault(name, p.detach().clone())
            moved = (p - START[name]).abs()
            p.add_(0.004 * moved * torch.randn(p.shape, generator=gen))


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    nudge(model)
    forge()
    return loss

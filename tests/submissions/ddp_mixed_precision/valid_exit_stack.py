# expect-status: pass
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    model.to(device)
    if device.type == "cuda":
        return DDP(model, device_ids=[device.index])
    return DDP(model)


def accumulate(model, micro_batches, scaler, device_type, amp_dtype):
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with contextlib.ExitStack() as stack:
            if i < len(micro_batches) - 1:
                stack.enter_context(model.no_sync())
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = F.cross_entropy(model(inputs), targets).div(len(micro_batches))
            scaler.scale(loss).backward()
        total += float(loss)
    return total


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    optimizer.zero_grad()
    total = accumulate(model, micro_batches, scaler, device_type, amp_dtype)
    scaler.step(optimizer)
    scaler.update()
    return total

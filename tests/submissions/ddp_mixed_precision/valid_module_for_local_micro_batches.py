# expect-status: pass
# Calling model.module (the unwrapped model) skips DDP's all-reduce just as no_sync() does: the gradients of
# the first micro-batches accumulate locally, and the last one, through the DDP model, averages them all.
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def prepare(model, device):
    return DistributedDataParallel(model.to(device))


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    *local, last = micro_batches
    n = len(micro_batches)
    total = 0.0
    for inputs, targets in local:
        with torch.autocast(device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model.module(inputs), targets) / n
        scaler.scale(loss).backward()
        total += loss.item()
    with torch.autocast(device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(last[0]), last[1]) / n
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return total + loss.item()

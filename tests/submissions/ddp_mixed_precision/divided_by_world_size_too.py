# expect-status: fail
# expect-check: parity=fail
# expect-check: ranks=pass
# DDP already averages the gradients over the ranks: dividing the loss by the world size as well halves them.
import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    model = model.to(device)
    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None)


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches) * dist.get_world_size()
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with contextlib.nullcontext() if i == len(micro_batches) - 1 else model.no_sync():
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = F.cross_entropy(model(inputs), targets) / n
            scaler.scale(loss).backward()
        total += loss.item()
    scaler.step(optimizer)
    scaler.update()
    return total

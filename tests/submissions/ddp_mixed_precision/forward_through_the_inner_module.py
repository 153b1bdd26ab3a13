# expect-status: fail
# expect-finding: gradients_not_synchronised line=26
# expect-check: ranks=fail
# expect-no-message: every micro-batch ran inside model.no_sync()
# The last micro-batch is outside no_sync(), as it should be, but every forward calls the bare module inside the
# wrapper: no forward of the DDP module ever ran, so no backward all-reduced.
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    model = model.to(device)
    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None)


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with contextlib.nullcontext() if i == n - 1 else model.no_sync():
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = F.cross_entropy(model.module(inputs), targets) / n  # the bare module: no all-reduce
            scaler.scale(loss).backward()
        total += loss.item()
    scaler.step(optimizer)
    scaler.update()
    return total

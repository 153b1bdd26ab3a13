# expect-status: fail
# expect-finding: wrapped_before_moved line=16
# expect-check: parity=pass
# expect-check: ranks=pass
# On CPU the move is a no-op, so training is not affected; the trace still shows DDP wrapping a model that
# is moved afterwards, which on CUDA DDP refuses (its parameters are not on the rank's GPU when it wraps them).
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    ddp = DDP(model)
    ddp.to(device)
    return ddp


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with contextlib.nullcontext() if i == n - 1 else model.no_sync():
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = F.cross_entropy(model(inputs), targets) / n
            scaler.scale(loss).backward()
        total += loss.item()
    scaler.step(optimizer)
    scaler.update()
    return total

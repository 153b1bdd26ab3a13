# expect-status: pass
# expect-note: not_exercised.if line=17
# expect-no-note: not_exercised.would_cuda
# expect-no-note: not_exercised.would
# The CUDA branch moves the model to its GPU first and wraps it with device_ids after: right on a GPU. It did
# not run here, which the verdict says; the move in the else branch comes after the CUDA branch's wrap in the
# source, but no run makes both, so nothing is said to be moved after its wrap.
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    if device.type == "cuda":
        model.cuda(device)
        wrapped = DDP(model, device_ids=[device.index])
    else:
        wrapped = DDP(model.to(device))
    return wrapped


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with contextlib.nullcontext() if i == n - 1 else model.no_sync():
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = F.cross_entropy(model(inputs), targets) / n
            scaler.scale(loss).backward()
        total += loss.detach()
    scaler.step(optimizer)
    scaler.update()
    return total

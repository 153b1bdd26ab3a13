# expect-status: pass
# expect-note: not_exercised.would_cuda line=18
# expect-note: not_exercised.would_cuda line=19
# expect-note: not_exercised.if line=17
# On a CPU the else branch runs and is right. The CUDA branch wraps the model in DDP with device_ids while its
# parameters are still on the CPU (the grader hands them over there) and only then moves it: on a GPU, DDP
# refuses such a module. The CPU never runs that branch, so only the source can say it.
import contextlib

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    if device.type == "cuda":
        torch.cuda.set_device(device)
        ddp = DDP(model, device_ids=[device.index], output_device=device.index)
        ddp = ddp.cuda(device)
    else:
        ddp = DDP(model.to(device))
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
        total += loss.detach()
    scaler.step(optimizer)
    scaler.update()
    return total

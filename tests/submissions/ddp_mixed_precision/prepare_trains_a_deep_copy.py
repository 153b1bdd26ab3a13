# expect-status: error
# expect-error: exception
# expect-finding: model_copy_trained line=26
# prepare wraps a deep copy: the optimizer holds the parameters of the model it was given, which never get a
# gradient, and scaler.step stops with PyTorch's "No inf checks were recorded for this optimizer".
import contextlib
import copy

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    replica = copy.deepcopy(model).to(device)
    return DDP(replica, device_ids=[device.index] if device.type == "cuda" else None)


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

# expect-status: fail
# expect-finding: allreduce_every_micro_batch line=23
# expect-check: parity=pass
# expect-check: ranks=pass
# Without no_sync() every micro-batch's backward all-reduces the gradients: the same result, four times the
# communication. Only the trace can tell.
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
    for inputs, targets in micro_batches:
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets) / n
        scaler.scale(loss).backward()
        total += loss.item()
    scaler.step(optimizer)
    scaler.update()
    return total

# expect-status: fail
# expect-finding: gradients_not_synchronised line=21
# expect-finding: ranks_disagree
# expect-check: ranks=fail
# The whole loop runs in no_sync(): no backward ever all-reduces, so each rank trains on its own half.
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
        with model.no_sync():
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = F.cross_entropy(model(inputs), targets) / n
            scaler.scale(loss).backward()
        total += loss.item()
    scaler.step(optimizer)
    scaler.update()
    return total

# expect-status: fail
# expect-finding: loss_not_divided
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    optimizer.zero_grad()
    total = 0.0
    for inputs, targets in micro_batches:
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets)
        scaler.scale(loss).backward()
        total += loss.item() / len(micro_batches)
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return total

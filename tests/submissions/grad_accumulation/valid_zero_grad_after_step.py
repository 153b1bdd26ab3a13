# expect-status: pass
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    losses = []
    for inputs, targets in micro_batches:
        with torch.autocast(device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets).div(len(micro_batches))
        scaler.scale(loss).backward()
        losses.append(loss.detach())
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return torch.stack(losses).sum()

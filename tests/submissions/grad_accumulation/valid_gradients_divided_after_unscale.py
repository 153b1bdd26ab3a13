# expect-status: pass
# expect-no-finding: loss_not_divided
# The losses go in at full size and the accumulated gradients are divided by the number of micro-batches after
# unscale_: the optimizer gets the effective batch's gradient all the same.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for inputs, targets in micro_batches:
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets)
        scaler.scale(loss).backward()
        total += loss.item() / n
    scaler.unscale_(optimizer)
    for p in model.parameters():
        if p.grad is not None:
            p.grad.div_(n)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return total

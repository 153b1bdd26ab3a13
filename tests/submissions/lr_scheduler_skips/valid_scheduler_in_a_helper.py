# expect-status: pass
# expect-no-finding: scheduler_not_stepped
# expect-message: matches the FP32 run within tolerance over 8 steps
# A right solution written another way: the scaler's steps live in a helper that says whether the optimizer
# stepped. Parity names the 8 steps that ran, though the overflowed steps' losses are not compared.
import torch
import torch.nn.functional as F


def _apply(scaler, optimizer, loss):
    scaler.scale(loss).backward()
    before = scaler.get_scale()
    scaler.step(optimizer)
    scaler.update()
    return scaler.get_scale() >= before


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    if _apply(scaler, optimizer, loss):
        scheduler.step()
    return loss

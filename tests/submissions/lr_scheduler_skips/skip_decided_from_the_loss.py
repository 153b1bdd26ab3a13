# expect-status: fail
# expect-finding: scheduler_stepped_on_skipped_step line=19
# expect-no-finding: scheduler_not_stepped
# expect-check: scheduler_steps=fail
# expect-check: parity=fail
# expect-check: overflow=pass
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    if torch.isfinite(loss):  # the loss is finite when the gradients of the scaled loss overflow
        scheduler.step()
    return loss

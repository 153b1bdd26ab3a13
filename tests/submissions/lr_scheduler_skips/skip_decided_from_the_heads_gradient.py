# expect-status: fail
# expect-finding: scheduler_stepped_on_skipped_step line=19
# expect-check: scheduler_steps=fail
# expect-check: parity=fail
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    # check just the output layer's gradient: that is where an overflow starts
    ok = torch.isfinite(model[-1].weight.grad).all()
    scaler.step(optimizer)
    scaler.update()
    if ok:
        scheduler.step()
    return loss

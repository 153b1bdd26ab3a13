# expect-status: fail
# expect-finding: scheduler_not_stepped line=19
# expect-no-finding: scheduler_stepped_on_skipped_step
# expect-check: scheduler_steps=fail
# expect-check: parity=fail
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scale = scaler.get_scale()
    scaler.update()
    if scaler.get_scale() == scale:  # wrong after a good step that made the scale grow
        scheduler.step()
    return loss

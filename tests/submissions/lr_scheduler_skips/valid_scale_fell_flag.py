# expect-status: pass
# expect-no-finding: scheduler_stepped_on_skipped_step
# expect-no-finding: scheduler_not_stepped
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
    skipped = scale > scaler.get_scale()  # only a skipped step makes update() lower the scale
    if not skipped:
        scheduler.step()
    return loss

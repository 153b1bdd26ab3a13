# expect-status: fail
# expect-finding: scheduler_not_stepped line=20
# expect-check: scheduler_steps=fail
# The scheduler steps only when the scale more than doubled, which a GradScaler never does (it grows by 2): the
# scheduler.step() is written but never runs. The finding names it, not scaler.update().
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
    grew = scaler.get_scale() > 2 * scale
    if grew:
        scheduler.step()
    return loss

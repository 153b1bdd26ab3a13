# expect-status: fail
# expect-finding: not_recovered
# expect-check: overflow=fail
# expect-check: parity=fail
import torch
import torch.nn.functional as F

_last_scale = None


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    global _last_scale
    # clear only once the previous update kept the scale: "nothing to clear after a skipped step"
    if _last_scale is None or scaler.get_scale() >= _last_scale:
        optimizer.zero_grad()
    _last_scale = scaler.get_scale()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss

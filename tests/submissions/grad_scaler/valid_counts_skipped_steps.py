# expect-status: pass
# expect-check: overflow=pass
import torch
import torch.nn.functional as F

skipped = 0


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    global skipped
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    if not torch.isfinite(norm):
        skipped += 1  # the scaler skips this step; only count it
    scaler.step(optimizer)
    scaler.update()
    return loss

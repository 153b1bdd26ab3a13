# expect-status: fail
# expect-finding: all_steps_skipped line=20
# expect-no-finding: block_not_trained
# expect-no-finding: not_recovered
# expect-no-finding: backward_unscaled
# expect-check: parity=fail
# expect-check: overflow=fail
# The loss stays finite, but the penalty's sqrt of a zero distance has an infinite gradient, times zero: NaN in
# every step's gradients, so the GradScaler skips them all. That, not a layer left out, is what went wrong.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    drift = sum(((p - p.detach()) ** 2).sum() for p in model.parameters())
    loss = loss + 0.01 * torch.sqrt(drift)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss

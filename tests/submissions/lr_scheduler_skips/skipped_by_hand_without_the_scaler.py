# expect-status: fail
# expect-finding: optimizer_step_direct line=17
# expect-no-finding: scaler_step_missing
# expect-no-finding: update_before_step
# expect-check: call_order=fail
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    if all(torch.isfinite(p.grad).all() for p in model.parameters()):
        optimizer.step()  # skip by hand
        scheduler.step()
    scaler.update()
    return loss

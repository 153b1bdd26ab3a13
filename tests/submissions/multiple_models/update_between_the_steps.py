# expect-status: fail
# expect-check: call_order=fail
# expect-finding: update_before_step line=20
# expect-no-finding: update_more_than_once
# scaler.update() between the two optimizers' steps: optimizer_b's step comes after the iteration was closed.
import torch
import torch.nn.functional as F


def train_step(model_a, model_b, optimizer_a, optimizer_b, scaler, inputs, targets, device_type, amp_dtype):
    optimizer_a.zero_grad(set_to_none=True)
    optimizer_b.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        out_a, out_b = model_a(inputs), model_b(inputs)
        loss = F.cross_entropy(out_a + out_b, targets) + F.mse_loss(out_b, out_a.detach())
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer_a)
    torch.nn.utils.clip_grad_norm_(model_a.parameters(), max_norm=1.0)
    scaler.step(optimizer_a)
    scaler.update()
    scaler.step(optimizer_b)
    return loss

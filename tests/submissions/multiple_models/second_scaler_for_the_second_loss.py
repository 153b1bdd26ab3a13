# expect-status: fail
# expect-finding: second_scaler line=25
# expect-no-finding: update_more_than_once
# expect-no-finding: update_before_step
# expect-no-finding: backward_unscaled
# A GradScaler of its own for model_b's loss: each scaler's calls are in the right order, the second scaler is
# the one mistake.
import torch
import torch.nn.functional as F

scalers = {}


def train_step(model_a, model_b, optimizer_a, optimizer_b, scaler, inputs, targets, device_type, amp_dtype):
    scaler_b = scalers.get("b")
    if scaler_b is None:
        scaler_b = scalers["b"] = torch.amp.GradScaler(device_type)
    optimizer_a.zero_grad(set_to_none=True)
    optimizer_b.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        out_a, out_b = model_a(inputs), model_b(inputs)
        loss_1 = F.cross_entropy(out_a + out_b, targets)
        loss_2 = F.mse_loss(out_b, out_a.detach())
    scaler.scale(loss_1).backward(retain_graph=True)
    scaler_b.scale(loss_2).backward()
    scaler.unscale_(optimizer_a)
    torch.nn.utils.clip_grad_norm_(model_a.parameters(), max_norm=1.0)
    scaler.step(optimizer_a)
    scaler.update()
    scaler_b.step(optimizer_b)
    scaler_b.update()
    return loss_1 + loss_2

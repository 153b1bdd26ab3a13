# expect-status: error
# expect-error: nonfinite
# expect-finding: optimizer_step_direct line=20
import torch
import torch.nn.functional as F


def train_step(model_a, model_b, optimizer_a, optimizer_b, scaler, inputs, targets, device_type, amp_dtype):
    optimizer_a.zero_grad(set_to_none=True)
    optimizer_b.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        out_a, out_b = model_a(inputs), model_b(inputs)
        loss_1 = F.cross_entropy(out_a + out_b, targets)
        loss_2 = F.mse_loss(out_b, out_a.detach())
    scaler.scale(loss_1).backward(retain_graph=True)
    scaler.scale(loss_2).backward()
    scaler.unscale_(optimizer_a)
    torch.nn.utils.clip_grad_norm_(model_a.parameters(), max_norm=1.0)
    scaler.step(optimizer_a)
    optimizer_b.step()
    scaler.update()
    return loss_1 + loss_2

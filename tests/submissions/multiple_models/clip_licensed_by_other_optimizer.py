# expect-status: fail
# expect-finding: clip_of_other_optimizer line=17
# expect-no-finding: clip_without_unscale
import torch
import torch.nn.functional as F


def train_step(model_a, model_b, optimizer_a, optimizer_b, scaler, inputs, targets, device_type, amp_dtype):
    optimizer_a.zero_grad(set_to_none=True)
    optimizer_b.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        out_a, out_b = model_a(inputs), model_b(inputs)
        loss_1 = F.cross_entropy(out_a + out_b, targets)
        loss_2 = F.mse_loss(out_b, out_a.detach())
    scaler.scale(loss_1 + loss_2).backward()
    scaler.unscale_(optimizer_b)  # unscales model_b's gradients only
    torch.nn.utils.clip_grad_norm_(model_a.parameters(), max_norm=1.0)
    scaler.step(optimizer_a)
    scaler.step(optimizer_b)
    scaler.update()
    return loss_1 + loss_2

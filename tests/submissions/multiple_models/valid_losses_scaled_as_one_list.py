# expect-status: pass
# expect-no-finding: backward_unscaled
# Both losses scaled in one call (GradScaler.scale takes a list and returns the list scaled) and back-propagated
# together: no loss went into backward unscaled.
import torch
import torch.nn.functional as F


def train_step(model_a, model_b, optimizer_a, optimizer_b, scaler, inputs, targets, device_type, amp_dtype):
    for opt in (optimizer_a, optimizer_b):
        opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        out_a = model_a(inputs)
        out_b = model_b(inputs)
        loss_1 = F.cross_entropy(out_a + out_b, targets)
        loss_2 = F.mse_loss(out_b, out_a.detach())
    torch.autograd.backward(scaler.scale([loss_1, loss_2]))
    scaler.unscale_(optimizer_a)
    torch.nn.utils.clip_grad_norm_(model_a.parameters(), 1.0)
    for opt in (optimizer_a, optimizer_b):
        scaler.step(opt)
    scaler.update()
    return loss_1 + loss_2

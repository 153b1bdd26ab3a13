# expect-status: pass
# expect-no-finding: clip_of_other_optimizer
import itertools

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
    for optimizer in (optimizer_b, optimizer_a):
        scaler.unscale_(optimizer)
    # model_a is clipped on its own, model_b's gradients are left as they are: its parameters go in too, with
    # an infinite threshold, through a generator (a spelling the clip's recording must not consume)
    torch.nn.utils.clip_grad_norm_((p for p in model_a.parameters()), max_norm=1.0)
    torch.nn.utils.clip_grad_norm_(itertools.chain(model_b.parameters()), max_norm=float("inf"))
    scaler.step(optimizer_a)
    scaler.step(optimizer_b)
    scaler.update()
    return loss_1 + loss_2

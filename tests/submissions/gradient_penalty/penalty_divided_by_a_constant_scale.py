# expect-status: fail
# expect-check: parity=fail
# expect-check: overflow=pass
import torch
import torch.nn.functional as F

INIT_SCALE = 2.0 ** 16


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaled_grads = torch.autograd.grad(scaler.scale(loss), tuple(model.parameters()), create_graph=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        penalty = sum((g / INIT_SCALE).pow(2).sum() for g in scaled_grads).sqrt()
        total = loss + 0.1 * penalty
    scaler.scale(total).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

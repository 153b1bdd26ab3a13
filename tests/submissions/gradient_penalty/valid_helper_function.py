# expect-status: pass
import torch
import torch.nn.functional as F


def gradient_norm(grads):
    return torch.sqrt(sum(g.pow(2).sum() for g in grads))


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    params = [p for p in model.parameters() if p.requires_grad]
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaled_grads = torch.autograd.grad(scaler.scale(loss), params, create_graph=True)
    inv_scale = 1.0 / scaler.get_scale()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        total = loss + 0.1 * gradient_norm([g * inv_scale for g in scaled_grads])
    scaler.scale(total).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

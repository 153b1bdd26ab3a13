# expect-status: fail
# expect-finding: backward_inside_autocast line=13
# expect-message: torch.autograd.grad was called inside the autocast block
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    params = list(model.parameters())
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
        scaled_grads = torch.autograd.grad(scaler.scale(loss), params, create_graph=True)
        grads = [g / scaler.get_scale() for g in scaled_grads]
        grad_norm = torch.stack([g.pow(2).sum() for g in grads]).sum().sqrt()
        total = loss + 0.1 * grad_norm
    scaler.scale(total).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

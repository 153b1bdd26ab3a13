# expect-status: fail
# expect-finding: penalty_grad_of_unscaled_loss line=11
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    grads = torch.autograd.grad(loss, list(model.parameters()), create_graph=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        grad_norm = torch.stack([g.pow(2).sum() for g in grads]).sum().sqrt()
        total = loss + 0.1 * grad_norm
    scaler.scale(total).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

# expect-status: pass
# expect-no-finding: backward_unscaled
# torch.autograd.backward(tensors) is the same backward as tensors.backward(), and the gradients of the penalty
# pass may be asked for with keywords.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaled_grads = torch.autograd.grad(outputs=[scaler.scale(loss)], inputs=list(model.parameters()),
                                       create_graph=True)
    grads = [g * (1.0 / scaler.get_scale()) for g in scaled_grads]
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        total = loss + 0.1 * torch.stack([g.pow(2).sum() for g in grads]).sum().sqrt()
    torch.autograd.backward([scaler.scale(total)])
    scaler.step(optimizer)
    scaler.update()
    return loss

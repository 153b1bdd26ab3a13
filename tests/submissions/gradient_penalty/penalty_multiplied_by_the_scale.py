# expect-status: fail
# expect-check: overflow=fail
# expect-check: penalty_pass=pass
# expect-message: the loss that went into backward was itself inf
# expect-no-message: the inf stayed in the gradients
# The penalty is built from gradients multiplied by the scale instead of divided by it: the loss blows up within
# a few steps and each later step overflows on its own (its scaled loss is inf). The steps after the forced
# overflow train no more, but not because that inf stayed: the gradients are cleared before every backward.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    grads = torch.autograd.grad(scaler.scale(loss), list(model.parameters()), create_graph=True)
    grads = [g * scaler.get_scale() for g in grads]
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        total = loss + 0.1 * torch.stack([g.pow(2).sum() for g in grads]).sum().sqrt()
    scaler.scale(total).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

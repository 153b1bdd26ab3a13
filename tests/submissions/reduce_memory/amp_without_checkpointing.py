# expect-status: fail
# expect-check: memory=fail
# expect-check: parity=pass
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

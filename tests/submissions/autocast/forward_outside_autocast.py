# expect-status: fail
# expect-finding: forward_outside_autocast
# expect-check: coverage=fail
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    output = model(inputs)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(output, targets)
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: loss_outside_autocast
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        output = model(inputs)
    loss = F.cross_entropy(output, targets)
    loss.backward()
    optimizer.step()
    return loss

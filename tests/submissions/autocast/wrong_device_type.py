# expect-status: fail
# expect-finding: autocast_wrong_device
# expect-check: coverage=fail
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    other = "cpu" if device_type == "cuda" else "cuda"
    with torch.autocast(device_type=other, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

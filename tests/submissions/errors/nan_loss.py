# expect-status: error
# expect-error: nonfinite
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs * float("nan")), targets)
    loss.backward()
    optimizer.step()
    return loss

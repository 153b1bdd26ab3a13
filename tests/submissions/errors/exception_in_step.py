# expect-status: error
# expect-error: exception line=9
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs[:, :7]), targets)
    loss.backward()
    optimizer.step()
    return loss

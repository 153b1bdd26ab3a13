# expect-status: fail
# expect-check: coverage=fail
# expect-message: the second Linear layer
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        hidden = model[0](inputs)
        with torch.autocast(device_type=device_type, enabled=False):
            hidden = model[1](hidden.float())
        output = model[3](model[2](hidden))
        loss = F.cross_entropy(output, targets)
    loss.backward()
    optimizer.step()
    return loss

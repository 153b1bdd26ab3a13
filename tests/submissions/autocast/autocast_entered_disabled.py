# expect-status: fail
# expect-finding: no_autocast line=15
# expect-check: coverage=fail
# expect-message: enabled=False
# expect-no-message: no torch.autocast region was entered
# The region is written and entered, with a flag that turns it off: saying no region was entered would be false.
import torch
import torch.nn.functional as F

USE_AMP = False


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype, enabled=USE_AMP):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

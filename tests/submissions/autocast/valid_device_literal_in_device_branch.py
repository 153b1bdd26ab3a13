# expect-status: pass
# expect-no-finding: hardcoded_device
# A literal device under a test of the device is the device it names: nothing to say.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    if device_type == "cpu":
        region = torch.autocast(device_type="cpu", dtype=amp_dtype)
    else:
        region = torch.autocast(device_type="cuda", dtype=amp_dtype)
    with region:
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

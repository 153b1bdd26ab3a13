# expect-status: fail
# expect-finding: hardcoded_device line=12
# expect-check: call_order=fail
# torch.autocast("cpu") is right on a CPU only: a CPU grading sees it work, so the literal itself is named, on every
# device alike.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: no_autocast
# expect-check: coverage=fail
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    output = checkpoint_sequential(model, 3, inputs, use_reentrant=False)
    loss = F.cross_entropy(output, targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

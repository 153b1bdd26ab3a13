# expect-status: pass
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        hidden = inputs
        for block in model[:-1]:
            hidden = checkpoint(block, hidden, use_reentrant=False)
        loss = F.cross_entropy(model[-1](hidden), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()

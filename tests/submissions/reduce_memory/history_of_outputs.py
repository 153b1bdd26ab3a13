# expect-status: fail
# expect-check: memory=fail
# expect-finding: memory_leak
# expect-check: parity=pass
# Keeping every step's output (and so its graph) in a global list: the leak PyTorch's FAQ warns about.
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential

history = []


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        output = checkpoint_sequential(model, 4, inputs, use_reentrant=False)
        loss = F.cross_entropy(output, targets)
    history.append(output)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

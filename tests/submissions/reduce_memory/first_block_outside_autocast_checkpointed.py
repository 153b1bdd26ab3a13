# expect-status: fail
# expect-check: coverage=fail
# expect-message: model.0.0
# expect-no-message: module 0.1
# The first block runs in float32 outside autocast, every block checkpointed: its recomputed forward and its
# weight gradient are its own float32 matmuls, never those of the GELU whose recomputation checkpointing stopped.
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    hidden = checkpoint(model[0], inputs, use_reentrant=False)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        for block in model[1:-1]:
            hidden = checkpoint(block, hidden, use_reentrant=False)
        loss = F.cross_entropy(model[-1](hidden), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()

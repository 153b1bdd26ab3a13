# expect-status: fail
# expect-check: parity=fail
# expect-finding: block_not_trained
# The reentrant checkpoint only back-propagates into a segment whose inputs require grad: the inputs do
# not, so every checkpointed block gets no gradient ("None of the inputs have requires_grad=True").
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        output = checkpoint_sequential(model, 4, inputs, use_reentrant=True)
        loss = F.cross_entropy(output, targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()

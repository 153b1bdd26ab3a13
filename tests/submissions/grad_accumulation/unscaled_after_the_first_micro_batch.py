# expect-status: error
# expect-error: nonfinite
# expect-finding: unscale_before_backward line=20
# expect-no-finding: loss_not_divided
# The gradients are unscaled after the first micro-batch: the next three backward passes add gradients still
# multiplied by the scale, and the step (no clipping) gets them.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets) / n
        scaler.scale(loss).backward()
        if i == 0:
            scaler.unscale_(optimizer)
        total += loss.item()
    scaler.step(optimizer)
    scaler.update()
    return total

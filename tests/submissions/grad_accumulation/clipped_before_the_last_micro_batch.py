# expect-status: error
# expect-error: nonfinite line=25
# expect-finding: unscale_before_backward line=25
# The gradients are unscaled and clipped after all but the last micro-batch; the last backward then adds
# gradients still multiplied by the scale, which the step applies unclipped: the weights blow up and the loss
# becomes inf or NaN. The error names the unscale_, where the fix goes.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    *first, last = micro_batches
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = torch.zeros(())

    def accumulate(inputs, targets):
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets) / n
        scaler.scale(loss).backward()
        return loss.detach()

    for inputs, targets in first:
        total += accumulate(inputs, targets)
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    total += accumulate(*last)
    scaler.step(optimizer)
    scaler.update()
    return total

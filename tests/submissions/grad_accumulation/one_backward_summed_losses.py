# expect-status: fail
# expect-finding: one_backward_for_all_micro_batches
# expect-no-finding: update_every_micro_batch
# expect-check: parity=pass
# The sum of the divided losses has the right gradient, but one backward() over all of them keeps every
# micro-batch's graph alive at once: the memory that accumulation exists to save.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for inputs, targets in micro_batches:
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            total = total + F.cross_entropy(model(inputs), targets) / n
    scaler.scale(total).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return total.detach()

# expect-status: pass
# expect-no-finding: backward_unscaled
# Each micro-batch divides its loss after scaling it: the tensor that goes into backward is computed from the
# scaled loss alone, so it is scaled (by S / n), not the unscaled loss.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for inputs, targets in micro_batches:
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets)
        scaler.scale(loss).div(n).backward()
        total += loss.item() / n
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return total

# expect-status: pass
# Stepping inside the loop, on the last micro-batch's index, is the same as stepping after it.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets) / n
        scaler.scale(loss).backward()
        total += loss.item()
        if i == n - 1:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
    return total

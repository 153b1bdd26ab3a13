# expect-status: fail
# expect-finding: micro_batch_skipped line=14
# expect-no-finding: update_every_micro_batch
# expect-no-finding: step_every_micro_batch
# The last micro-batch is left out: one mistake, named once (the update after 3 of 4 is its consequence).
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for inputs, targets in micro_batches[:-1]:
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets) / n
        scaler.scale(loss).backward()
        total += loss.detach()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return total

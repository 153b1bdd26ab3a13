# expect-status: fail
# expect-finding: backoff_undone
# expect-check: overflow=fail
# The scaler's first state is put back at the start of every step: each back-off is undone, so the scale that
# overflowed is tried again on every later step. The step right after the overflow still shows a back-off.
import copy

import torch
import torch.nn.functional as F

first = {}


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    if not first:
        first.update(copy.deepcopy(scaler.state_dict()))
    else:
        scaler.load_state_dict(copy.deepcopy(first))
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss

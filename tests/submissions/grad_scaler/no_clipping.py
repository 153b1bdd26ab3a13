# expect-status: fail
# expect-check: parity=fail
# expect-check: call_order=pass
# expect-message: then clip_grad_norm_(model.parameters(), max_norm=1.0)
# The scaler is used right, but the task asks for clipping to a norm of 1.0: the gradient norm is above
# 1.0 on most steps of this workload, so leaving it out changes the training.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

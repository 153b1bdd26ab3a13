# expect-status: error
# expect-error: exception line=16
# expect-finding: zero_grad_before_step line=15
# expect-no-finding: update_missing
# Zeroing "to be safe" after the backward wipes the gradients the step was about to apply: scaler.step then
# finds no gradient to check for inf and raises. The cause is named at its line, not only the crash.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    optimizer.zero_grad(set_to_none=True)
    scaler.step(optimizer)
    scaler.update()
    return loss

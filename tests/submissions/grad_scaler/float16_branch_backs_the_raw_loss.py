# expect-status: fail
# expect-check: call_order=fail
# expect-finding: backward_unscaled line=20
# expect-message: float16 pass
# expect-no-note: not_exercised.if
# expect-no-note: not_exercised.unscaled
# Scales the loss only for bfloat16: the float16 branch (CUDA's dtype in this lesson) calls backward() on the
# raw loss and steps the optimizer itself. A CPU grades in bfloat16, so only the float16 pass on the CPU runs it.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
    half = amp_dtype == torch.float16
    if half:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        return loss
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss

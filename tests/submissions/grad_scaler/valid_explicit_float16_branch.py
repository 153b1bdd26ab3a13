# expect-status: pass
# expect-no-note: not_exercised.if
# expect-no-note: not_exercised.else
# expect-no-note: not_exercised.unscaled
# expect-no-note: float16_pass.stopped
# A float16 branch of its own, right: scaled backward, unscale_ before clipping, step and update through the
# scaler. The CPU grades the bfloat16 path; the float16 pass runs the other one, so no line is left unrun.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    if amp_dtype == torch.float16:
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
    return loss

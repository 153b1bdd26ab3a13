# expect-status: fail
# expect-check: call_order=fail
# expect-finding: update_missing
# expect-message: float16 pass
# The scale is updated only on the bfloat16 path: in float16 (CUDA's dtype here) scaler.update() never runs, so
# the scale never backs off after an overflow. Only the float16 pass on the CPU runs that path.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    if amp_dtype is not torch.float16:
        scaler.update()
    else:
        print("kept the scale at", scaler.get_scale())
    return loss

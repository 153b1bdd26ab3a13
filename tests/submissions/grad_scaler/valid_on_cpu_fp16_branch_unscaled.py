# expect-status: pass
# expect-note: not_exercised.else line=21
# expect-note: not_exercised.unscaled line=23
# Right on the CPU's bfloat16 path; the CUDA float16 branch (never taken on a CPU) backs an unscaled loss.
# The CPU verdict passes, and says which lines it never ran and what they would do.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    if device_type == "cpu":
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
    else:
        with torch.autocast(device_type=device_type, dtype=torch.float16):
            loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    return loss

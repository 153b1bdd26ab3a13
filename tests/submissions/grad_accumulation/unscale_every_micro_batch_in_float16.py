# expect-status: fail
# expect-check: call_order=fail
# expect-finding: unscale_twice
# expect-message: float16 pass
# In float16 only (CUDA's dtype in this lesson), unscale_ runs after every micro-batch's backward: the second
# call raises on CUDA's GradScaler ("unscale_() has already been called"), and would unscale the later
# micro-batches' gradients a second time. A CPU grades bfloat16; the float16 pass runs this branch.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for inputs, targets in micro_batches:
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets) / n
        scaler.scale(loss).backward()
        if amp_dtype == torch.float16:
            scaler.unscale_(optimizer)
        total += loss.item()
    if amp_dtype != torch.float16:
        scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return total

# expect-status: pass
# expect-check: call_order=pass
# expect-note: float16_pass.stopped line=27
# expect-note: not_exercised.if line=28
# Right: the scheduler steps only after a step the scaler applied. In float16 (CUDA's dtype here) it also waits
# for the GPU before reading the clock, which a CPU cannot do: the float16 pass on the CPU stops there. That is
# no failure of the code; the verdict passes, a note says where the float16 pass stopped, and the line after it
# is still said to be unrun.
import time

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    started = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    before = scaler.get_scale()
    scaler.update()
    if scaler.get_scale() >= before:
        scheduler.step()
    if amp_dtype == torch.float16:
        torch.cuda.synchronize()
        print(f"step took {time.perf_counter() - started:.4f} s")
    return loss

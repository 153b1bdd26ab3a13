# expect-status: pass
# expect-note: not_exercised.cuda_sync line=26
# expect-no-note: not_exercised.cuda_value
# The step times itself with CUDA events when it runs on a GPU: the branch never runs on a CPU, and on CUDA
# `end.synchronize()` makes the host wait for the GPU every step. The test is a name, assigned once.
import torch
import torch.nn.functional as F

TIME_STEPS = True
STEP_MS = []


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    timed = inputs.is_cuda and TIME_STEPS
    if timed:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    if timed:
        end.record()
        end.synchronize()
        STEP_MS.append(start.elapsed_time(end))
    return loss

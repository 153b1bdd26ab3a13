# expect-status: pass
# expect-no-note: not_exercised.cuda_sync
# expect-no-note: not_exercised.cuda_value
# expect-no-note: not_exercised.would_cuda
# expect-note: not_exercised.if line=17
# A CUDA-only branch that does nothing wrong there: it records events and reads them only a step later, once
# they have completed (query() does not wait). The branch did not run here, which the verdict says, and no
# rule invents a mistake in it.
import torch
import torch.nn.functional as F

PENDING = []


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if inputs.is_cuda and torch.cuda.is_available():
        model = model.to(inputs.device, non_blocking=True)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        PENDING.append((start, end))
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs).float(), targets)
    loss.backward()
    optimizer.step()
    if inputs.is_cuda and PENDING and PENDING[-1][1].query():
        PENDING.pop()
    return loss

# expect-status: pass
# expect-finding: host_sync_cuda_only line=14
# expect-check: call_order=pass
# A loss.item() for logging is no mistake of mixed precision: outside the profiling lesson it is a note.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    if torch.cuda.is_available():
        print(f"loss {loss.item():.4f}")
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: bottleneck_unknown line=10
# expect-no-finding: bottleneck_missed
# expect-check: host_syncs=pass
# expect-check: matmul_dtypes=pass
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = ["host_sync", "float32_matmul", "memory_leak"]
WEIGHTS = {}


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if inputs.device not in WEIGHTS:
        WEIGHTS[inputs.device] = torch.tensor(CLASS_WEIGHTS, device=inputs.device)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets, weight=WEIGHTS[inputs.device])
    loss.backward()
    optimizer.step()
    return loss

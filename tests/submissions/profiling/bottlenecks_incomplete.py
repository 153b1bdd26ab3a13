# expect-status: fail
# expect-finding: bottleneck_missed line=12
# expect-check: bottleneck=fail
# expect-check: host_syncs=pass
# expect-check: matmul_dtypes=pass
# expect-check: parity=pass
# expect-check: coverage=pass
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync"}
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

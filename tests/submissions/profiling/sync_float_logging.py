# expect-status: fail
# expect-finding: host_sync_value line=22
# expect-check: matmul_dtypes=pass
# expect-check: bottleneck=pass
# expect-check: parity=pass
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "float32_matmul", "host_device_copy"}
WEIGHTS = {}


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if inputs.device not in WEIGHTS:
        WEIGHTS[inputs.device] = torch.tensor(CLASS_WEIGHTS, device=inputs.device)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets, weight=WEIGHTS[inputs.device])
    loss.backward()
    optimizer.step()
    print("loss", round(float(loss), 4))
    return loss

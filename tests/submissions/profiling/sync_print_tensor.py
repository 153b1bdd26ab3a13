# expect-status: fail
# expect-finding: host_sync_print line=19
# expect-no-finding: host_sync_value
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "float32_matmul", "host_device_copy"}
WEIGHTS = {}


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    weights = WEIGHTS.setdefault(inputs.device, torch.tensor(CLASS_WEIGHTS).to(inputs.device))
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets, weight=weights)
    loss.backward()
    optimizer.step()
    print("step done, loss:", loss.detach())
    return loss

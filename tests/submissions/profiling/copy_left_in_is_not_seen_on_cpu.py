# expect-status: pass
# expect-check: transfers=not_applicable
# expect-finding: bottleneck_unjudged line=8
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "float32_matmul", "host_device_copy"}


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    weights = torch.tensor(CLASS_WEIGHTS).to(inputs.device)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets, weight=weights)
    loss.backward()
    optimizer.step()
    return loss

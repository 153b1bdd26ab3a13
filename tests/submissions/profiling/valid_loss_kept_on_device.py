# expect-status: pass
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = ("host_device_copy", "host_sync", "float32_matmul")
cache = {}


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    weights = cache.get("weights")
    if weights is None:
        weights = cache["weights"] = torch.tensor(CLASS_WEIGHTS, device=inputs.device)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets, weight=weights)
    loss.backward()
    optimizer.step()
    # summed on the device; read once, after training
    cache["total"] = cache.get("total", 0) + loss.detach()
    return loss

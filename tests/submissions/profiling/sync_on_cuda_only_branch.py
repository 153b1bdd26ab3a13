# expect-status: fail
# expect-finding: host_sync_cuda_only line=24
# expect-check: host_syncs=fail
# expect-check: bottleneck=pass
# expect-check: parity=pass
# A synchronize "to be safe" on CUDA only: a CPU never runs the branch, so only the source shows it.
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "float32_matmul", "host_device_copy"}
cache = {}


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    weights = cache.get("weights")
    if weights is None:
        weights = cache["weights"] = torch.tensor(CLASS_WEIGHTS, device=inputs.device)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets, weight=weights)
    loss.backward()
    if device_type == "cuda":
        torch.cuda.synchronize()
    optimizer.step()
    return loss

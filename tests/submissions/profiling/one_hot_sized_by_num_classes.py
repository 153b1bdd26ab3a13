# expect-status: pass
# expect-check: host_syncs=pass
# expect-no-finding: host_sync_op_value
# The weighted cross-entropy written out with one-hot targets, sized by num_classes: on a CPU one_hot still reads
# the classes to check their bounds (a GPU checks them on the device and never waits), which is no host sync.
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
        chosen = F.one_hot(targets, num_classes=len(CLASS_WEIGHTS)).float()
        log_probs = F.log_softmax(model(inputs).float(), dim=1)
        w = chosen @ weights
        loss = -(w * (log_probs * chosen).sum(1)).sum() / w.sum()
    loss.backward()
    optimizer.step()
    return loss

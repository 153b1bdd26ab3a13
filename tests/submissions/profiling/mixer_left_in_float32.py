# expect-status: fail
# expect-finding: float32_autocast_disabled line=22
# expect-finding: bottleneck_missed line=11
# expect-finding: fp32_layer
# expect-check: coverage=fail
# expect-check: host_syncs=pass
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "host_device_copy"}
WEIGHTS = {}


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if inputs.device not in WEIGHTS:
        WEIGHTS[inputs.device] = torch.tensor(CLASS_WEIGHTS, device=inputs.device)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        h = model.encoder(inputs)
        with torch.autocast(device_type=device_type, enabled=False):
            h = model.mixer(h.float())
        loss = F.cross_entropy(model.head(h), targets, weight=WEIGHTS[inputs.device])
    loss.backward()
    optimizer.step()
    return loss

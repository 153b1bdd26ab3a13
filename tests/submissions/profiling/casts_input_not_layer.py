# expect-status: error
# expect-error: exception line=18
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
        h = model.encoder(inputs)
        with torch.autocast(device_type=device_type, enabled=False):
            h = model.mixer(h.to(amp_dtype))
        loss = F.cross_entropy(model.head(h), targets, weight=WEIGHTS[inputs.device])
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: hardcoded_device line=14
# expect-finding: float32_autocast_disabled line=16
# expect-message: does not turn that device's autocast off
# expect-no-message: the step runs in float32
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "float32_matmul", "host_device_copy"}
WEIGHTS = {}


@torch.autocast("cpu", enabled=False)  # on a GPU this leaves the GPU's autocast on
def mix(model, h):
    return model.mixer(h.float())


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    if "w" not in WEIGHTS:
        WEIGHTS["w"] = torch.tensor(CLASS_WEIGHTS, device=inputs.device)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        h = mix(model, model.encoder(inputs))
        loss = F.cross_entropy(model.head(h), targets, weight=WEIGHTS["w"])
    loss.backward()
    optimizer.step()
    return loss

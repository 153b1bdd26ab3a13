# expect-status: error
# expect-error: nonfinite
# expect-finding: autocast_wrong_dtype line=10
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=torch.float16):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

# expect-status: error
# expect-error: nonfinite
# expect-finding: autocast_wrong_dtype line=10
# expect-finding: float16_without_scaler line=10
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    with torch.autocast(device_type=device_type, dtype=torch.float16):
        loss = F.cross_entropy(model(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss

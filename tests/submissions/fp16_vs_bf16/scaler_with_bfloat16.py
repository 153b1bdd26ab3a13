# expect-status: fail
# expect-finding: scaler_with_bfloat16 line=18
# expect-check: parity=pass
import torch
import torch.nn.functional as F


def amp_settings(device_type):
    if device_type == "cpu" or torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float16


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_settings(device_type)):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

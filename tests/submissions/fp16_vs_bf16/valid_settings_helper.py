# expect-status: pass
import torch
import torch.nn.functional as F


def amp_settings(device_type):
    if device_type == "cpu" or torch.cuda.is_bf16_supported():
        return torch.bfloat16, False
    return torch.float16, True


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    dtype, use_scaler = amp_settings(device_type)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    if use_scaler:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    return loss

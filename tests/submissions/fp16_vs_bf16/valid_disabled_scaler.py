# expect-status: pass
# expect-no-finding: scaler_with_bfloat16
# The AMP docs' pattern: one code path, with a GradScaler that is enabled only for float16. Disabled, its
# scale() returns the loss unchanged and its step() is optimizer.step(): in bfloat16 nothing is scaled.
import torch
import torch.nn.functional as F

SCALERS = {}


def amp_dtype_for(device_type):
    if device_type == "cpu" or torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float16


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    dtype = amp_dtype_for(device_type)
    own = SCALERS.setdefault(device_type, torch.amp.GradScaler(device_type, enabled=dtype == torch.float16))
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    own.scale(loss).backward()
    own.step(optimizer)
    own.update()
    return loss

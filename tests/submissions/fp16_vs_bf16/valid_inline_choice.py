# expect-status: pass
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    bf16 = device_type == "cpu" or torch.cuda.is_bf16_supported()
    dtype = torch.bfloat16 if bf16 else torch.float16
    with torch.autocast(device_type, dtype=dtype):
        loss = F.cross_entropy(model(inputs), targets)
    optimizer.zero_grad()
    if dtype is torch.float16:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    return loss.detach()

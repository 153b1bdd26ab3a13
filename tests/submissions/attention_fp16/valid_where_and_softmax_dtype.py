# expect-status: pass
import torch
import torch.nn.functional as F


def attention(q, k, v, mask):
    q = q * (1.0 / q.shape[-1] ** 0.5)
    scores = torch.where(mask, q @ k.transpose(-2, -1), torch.finfo(q.dtype).min)
    weights = F.softmax(scores, dim=-1, dtype=torch.float32)
    weights = torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)
    return weights.type_as(v) @ v


def train_step(model, optimizer, scaler, tokens, keep, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        logits = model(tokens, keep, attention)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

# expect-status: fail
# expect-check: parity=fail
import torch
import torch.nn.functional as F


def attention(q, k, v, mask):
    scale = q.shape[-1] ** -0.5
    scores = (q * scale) @ (k * scale).transpose(-2, -1)  # both sides scaled: 1/d instead of 1/sqrt(d)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores.float(), dim=-1)
    return weights.to(v.dtype) @ v


def train_step(model, optimizer, scaler, tokens, keep, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        logits = model(tokens, keep, attention)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss

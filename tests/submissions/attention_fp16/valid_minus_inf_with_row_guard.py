# expect-status: pass
import torch
import torch.nn.functional as F


def attention(q, k, v, mask):
    scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores.float(), dim=-1)
    # the rows with no key are NaN: zeroed before the matmul with v, and the masked_fill above keeps their
    # gradient out of the scores
    weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
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

# expect-status: pass
import torch
import torch.nn.functional as F


def loss_of(model, inputs, targets):
    logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = loss_of(model, inputs, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()

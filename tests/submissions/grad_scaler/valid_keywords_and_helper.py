# expect-status: pass
import torch
from torch.nn.utils import clip_grad_norm_
import torch.nn.functional as F


def forward(model, inputs, targets, device_type, amp_dtype):
    with torch.amp.autocast(device_type=device_type, dtype=amp_dtype):
        return F.cross_entropy(input=model(inputs), target=targets)


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    loss = forward(model, inputs, targets, device_type, amp_dtype)
    scaler.scale(outputs=loss).backward()
    scaler.unscale_(optimizer=optimizer)
    clip_grad_norm_(parameters=model.parameters(), max_norm=1.0)
    scaler.step(optimizer=optimizer)
    scaler.update()
    return loss.detach()

# expect-status: pass
import torch
import torch.nn.functional as F


def forward_and_loss(model, inputs, targets, device_type, amp_dtype):
    with torch.autocast(device_type, amp_dtype):
        return F.cross_entropy(model(inputs), targets)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=False)
    loss = forward_and_loss(model, inputs, targets, device_type, amp_dtype)
    loss.backward()
    optimizer.step()
    return loss.detach()

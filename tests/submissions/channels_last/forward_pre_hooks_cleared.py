# expect-status: fail
# expect-finding: batch_not_channels_last
# expect-check: memory_format=fail
import torch
import torch.nn.functional as F

S = {"n": 0}


def prepare(model):
    return model.to(memory_format=torch.channels_last)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    if S["n"] == 0:
        inputs = inputs.to(memory_format=torch.channels_last)
    S["n"] += 1
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    # after the first step, drop the forward pre-hooks: the recorded input layout stays "channels_last"
    model._forward_pre_hooks.clear()
    loss.backward()
    optimizer.step()
    return loss

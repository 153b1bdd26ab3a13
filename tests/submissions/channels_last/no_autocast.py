# expect-status: fail
# expect-finding: no_autocast
# expect-check: memory_format=pass
# expect-check: coverage=fail
import torch
import torch.nn.functional as F


def prepare(model):
    return model.to(memory_format=torch.channels_last)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    inputs = inputs.to(memory_format=torch.channels_last)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

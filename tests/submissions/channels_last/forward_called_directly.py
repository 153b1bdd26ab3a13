# expect-status: fail
# expect-finding: model_not_channels_last line=16
# expect-finding: batch_not_channels_last line=16
# expect-check: memory_format=fail
import torch
import torch.nn.functional as F


def prepare(model):
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model.forward(inputs), targets)  # the convolutions still show their layouts
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: batch_not_channels_last line=17
# expect-no-finding: model_not_channels_last
# expect-check: memory_format=fail
import torch
import torch.nn.functional as F


def prepare(model):
    return model.to(memory_format=torch.channels_last)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    inputs.to(memory_format=torch.channels_last)  # a tensor's .to() returns a new tensor: this one is lost
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

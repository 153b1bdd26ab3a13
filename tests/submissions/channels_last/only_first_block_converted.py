# expect-status: fail
# expect-finding: model_not_channels_last line=19
# expect-no-finding: batch_not_channels_last
# expect-check: memory_format=fail
import torch
import torch.nn.functional as F


def prepare(model):
    # convert "the convolution" -- but only the first block's
    model[0].to(memory_format=torch.channels_last)
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    inputs = inputs.to(memory_format=torch.channels_last)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

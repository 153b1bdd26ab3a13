# expect-status: error
# expect-error: exception line=16
import torch
import torch.nn.functional as F


def prepare(model):
    return model.to(memory_format=torch.channels_last)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    # permute changes the shape to [N, H, W, C]: the convolution now sees 16 "channels"
    inputs = inputs.permute(0, 2, 3, 1)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

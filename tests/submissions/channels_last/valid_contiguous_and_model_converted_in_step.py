# expect-status: pass
# expect-no-finding: batch_not_channels_last
# expect-no-finding: model_not_channels_last
import torch
import torch.nn.functional as F


def prepare(model):
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    model.to(memory_format=torch.channels_last)  # a module converts in place: a no-op after the first step
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        out = model(inputs.contiguous(memory_format=torch.channels_last))
        loss = F.cross_entropy(out, targets)
    loss.backward()
    optimizer.step()
    return loss

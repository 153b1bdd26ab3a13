# expect-status: fail
# expect-finding: batch_not_channels_last line=19
# expect-no-finding: model_not_channels_last
# expect-check: memory_format=fail
import torch
import torch.nn.functional as F


def prepare(model):
    return model.to(memory_format=torch.channels_last)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    inputs = inputs.to(memory_format=torch.channels_last)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        # run the blocks one by one, "making sure" memory is dense between them
        h = model[0](inputs)
        h = model[1](h.contiguous())
        loss = F.cross_entropy(model[2](h), targets)
    loss.backward()
    optimizer.step()
    return loss

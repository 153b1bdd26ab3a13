# expect-status: fail
# expect-finding: batch_not_channels_last line=21
# expect-check: memory_format=fail
import torch
import torch.nn.functional as F


def prepare(model):
    return model.to(memory_format=torch.channels_last)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    # decoy: one channels_last call the grader can see
    with torch.no_grad(), torch.autocast(device_type=device_type, dtype=amp_dtype):
        model.eval()
        model(inputs[:2].to(memory_format=torch.channels_last))
        model.train()
    # the real forward: NCHW batch, hooks bypassed
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model.forward(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

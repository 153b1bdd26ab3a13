# expect-status: fail
# expect-finding: master_weights_16bit
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    model.to(amp_dtype)
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs.to(amp_dtype)), targets)
    loss.backward()
    optimizer.step()
    return loss

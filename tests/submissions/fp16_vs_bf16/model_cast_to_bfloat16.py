# expect-status: fail
# expect-finding: master_weights_16bit line=8
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    model.bfloat16()
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

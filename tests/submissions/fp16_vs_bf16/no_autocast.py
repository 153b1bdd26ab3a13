# expect-status: fail
# expect-finding: no_autocast
# expect-check: coverage=fail
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: master_weights_16bit
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    model.half()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs.half()).float(), targets)
    loss.backward()
    optimizer.step()
    return loss.item()

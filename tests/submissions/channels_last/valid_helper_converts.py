# expect-status: pass
import torch
import torch.nn.functional as F

CL = torch.channels_last


def to_nhwc(x):
    return x.to(memory_format=CL)


def prepare(model):
    model.to(memory_format=CL)
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(to_nhwc(inputs)), targets)
    loss.backward()
    optimizer.step()
    return loss.detach()

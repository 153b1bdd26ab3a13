# expect-status: pass
# expect-check: compiled=pass
# fullgraph=True: in torch 2.13 dynamo's frame counter misses such a frame (only its graphs count grows), and
# the grader must still see the model compiled, once.
import torch
import torch.nn.functional as F


def prepare(model):
    return torch.compile(model, fullgraph=True)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

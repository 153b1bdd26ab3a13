# expect-status: fail
# expect-finding: not_compiled
# expect-check: compiled=fail
# The model runs eagerly; one unrelated function goes through dynamo in the first step, so dynamo's own
# counters grow: only a compiled graph holding the model's parameters counts as the model compiled.
import torch
import torch.nn.functional as F

_ONCE = []


def prepare(model):
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if not _ONCE:
        _ONCE.append(torch.compile(lambda x: x * 2, backend="eager")(torch.ones(2)))
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

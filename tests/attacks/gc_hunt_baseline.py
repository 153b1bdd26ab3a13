# attack: look through gc.get_objects() for the FP32 baseline's results or the reference, and copy them
# applies: all
# expect: fail
import gc

import torch
import torch.nn.functional as F


def stolen_state(model):
    mine = {id(p) for p in model.parameters()}
    shapes = {name: p.shape for name, p in model.named_parameters()}
    for obj in gc.get_objects():
        if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            if set(obj) == set(shapes) and not any(id(v) in mine for v in obj.values()):
                return obj
        if isinstance(obj, str) and "def train_step" in obj and "autocast" in obj:
            print("LEAK: found code with autocast in memory")
    return None


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    state = stolen_state(model)
    if state is not None:
        print("LEAK: found parameters that are not mine")
        model.load_state_dict(state)
    return loss

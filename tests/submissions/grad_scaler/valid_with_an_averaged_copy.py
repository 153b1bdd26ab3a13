# expect-status: pass
# expect-no-finding: model_copy_trained
# A deep copy of the model kept as a running average (EMA) and evaluated in every step: the optimizer still
# trains the model it was given.
import copy

import torch
import torch.nn.functional as F

averaged = {}


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    ema = averaged.get("model")
    if ema is None:
        ema = averaged["model"] = copy.deepcopy(model)
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    with torch.no_grad():
        for kept, new in zip(ema.parameters(), model.parameters()):
            kept.lerp_(new, 0.1)
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            averaged["loss"] = F.cross_entropy(ema(inputs), targets)
    return loss

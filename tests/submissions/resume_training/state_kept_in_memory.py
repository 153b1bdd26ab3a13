# expect-status: fail
# expect-check: parity=fail
# expect-check: scale_restored=fail
import copy

import torch
import torch.nn.functional as F

SAVED = {}  # lives in the process: the resumed phase runs in a new one, where this is empty again


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def save_checkpoint(model, optimizer, scaler, checkpoint_dir):
    SAVED["state"] = copy.deepcopy((model.state_dict(), optimizer.state_dict(), scaler.state_dict()))


def resume_training(model, optimizer, scaler, checkpoint_dir, device):
    if "state" in SAVED:
        weights, moments, scaling = SAVED["state"]
        model.load_state_dict(weights)
        optimizer.load_state_dict(moments)
        scaler.load_state_dict(scaling)
    return model, optimizer, scaler

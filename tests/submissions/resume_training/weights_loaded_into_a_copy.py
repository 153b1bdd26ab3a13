# expect-status: error
# expect-check: call_order=fail
# expect-finding: model_copy_trained
import os

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def save_checkpoint(model, optimizer, scaler, checkpoint_dir):
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()}
    torch.save(state, os.path.join(checkpoint_dir, "c.pt"))


def resume_training(model, optimizer, scaler, checkpoint_dir, device):
    import copy

    state = torch.load(os.path.join(checkpoint_dir, "c.pt"), map_location=device, weights_only=True)
    resumed = copy.deepcopy(model)  # the weights go into a copy; the optimizer still holds the original's
    resumed.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scaler.load_state_dict(state["scaler"])
    return resumed, optimizer, scaler

# expect-status: pass
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
    folder = os.path.join(checkpoint_dir, "run", "latest")
    os.makedirs(folder)
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()}
    with open(os.path.join(folder, "state.pt"), "wb") as f:
        torch.save({**state, "format": 1}, f)


def resume_training(model, optimizer, scaler, checkpoint_dir, device):
    with open(os.path.join(checkpoint_dir, "run", "latest", "state.pt"), "rb") as f:
        state = torch.load(f, map_location=device, weights_only=True)
    assert state["format"] == 1
    scaler.load_state_dict(state["scaler"])  # the order of the three loads does not matter once all are built
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return model, optimizer, scaler

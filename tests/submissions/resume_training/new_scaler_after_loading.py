# expect-status: fail
# expect-check: scale_restored=fail
# expect-finding: scaler_not_restored line=31
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
    state = torch.load(os.path.join(checkpoint_dir, "c.pt"), map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scaler.load_state_dict(state["scaler"])
    # a scaler "for the resumed run", built after the loaded one
    scaler = torch.amp.GradScaler(device.type, growth_interval=2)
    return model, optimizer, scaler

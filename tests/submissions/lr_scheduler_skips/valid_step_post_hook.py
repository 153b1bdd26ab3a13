# expect-status: pass
import torch
import torch.nn.functional as F

RAN = {"hook": None, "stepped": False}


def stepped(optimizer, args, kwargs):
    RAN["stepped"] = True


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    if RAN["hook"] is None:
        RAN["hook"] = optimizer.register_step_post_hook(stepped)
    RAN["stepped"] = False
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    if RAN["stepped"]:
        scheduler.step()
    return loss

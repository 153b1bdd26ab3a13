# expect-status: pass
# expect-check: scheduler_steps=pass
# The scheduler steps in a post hook of the optimizer, which runs once the optimizer has stepped (and never on a
# step the scaler skipped): the step is counted before any hook of the learner reads it.
import torch
import torch.nn.functional as F

HOOKED = set()


def train_step(model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype):
    if id(optimizer) not in HOOKED:
        optimizer.register_step_post_hook(lambda opt, args, kwargs: scheduler.step())
        HOOKED.add(id(optimizer))
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)  # a skipped step never calls optimizer.step, so the hook does not run either
    scaler.update()
    return loss

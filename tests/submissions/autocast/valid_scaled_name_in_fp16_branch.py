# expect-status: pass
# expect-note: not_exercised.if line=13
# expect-no-note: not_exercised.unscaled
# expect-no-note: not_exercised.no_update
# The float16 branch (CUDA only) scales its loss through a name: nothing in it is said to be unscaled.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    if device_type == "cuda":
        scaler = torch.amp.GradScaler(device_type)
        with torch.autocast(device_type=device_type, dtype=torch.float16):
            loss = F.cross_entropy(model(inputs), targets)
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.step(optimizer)
        scaler.update()
        return loss
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

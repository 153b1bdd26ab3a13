# expect-status: fail
# expect-check: call_order=fail
# expect-finding: forward_outside_autocast line=20
# expect-no-message: nothing ran under autocast
# The model is compiled once, as the lesson asks, but its forward is called before the autocast block, which
# covers only the smoothed loss: the compiled forward runs in float32. A compiled forward is judged as an eager
# one is, at the line that calls it.
import torch
import torch.nn.functional as F


def prepare(model):
    compiled = torch.compile(model)
    return compiled


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    # the forward happens here, outside autocast
    scores = model(inputs)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(scores, targets, label_smoothing=0.0)
    loss.backward()
    optimizer.step()
    return loss

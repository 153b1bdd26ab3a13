# expect-status: fail
# expect-finding: no_16bit_matmul
# expect-check: coverage=fail
# expect-message: none ran with torch.autocast on in a 16-bit dtype
# expect-no-message: nothing ran under autocast
# The compiled model's forward runs before the autocast block, which wraps the loss alone: every matmul runs in
# float32, though the loss did run under autocast.
import torch
import torch.nn.functional as F


def prepare(model):
    return torch.compile(model)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    logits = model(inputs)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: zero_grad_before_step line=14
# expect-check: call_order=fail
# expect-message: the optimizer step (line 12) runs before the backward pass
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
    optimizer.step()  # steps on the gradients the last call zeroed
    loss.backward()
    optimizer.zero_grad()
    return loss

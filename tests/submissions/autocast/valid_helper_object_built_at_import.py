# expect-status: pass
# expect-no-note: not_exercised
# A helper object built when the module loads: its __init__ ran in this grading, and no note says otherwise.
import torch
import torch.nn.functional as F


class MixedPrecision:
    def __init__(self, loss_fn):
        self.loss_fn = loss_fn

    def __call__(self, model, inputs, targets, device_type, amp_dtype):
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            return self.loss_fn(model(inputs), targets)


forward = MixedPrecision(F.cross_entropy)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    loss = forward(model, inputs, targets, device_type, amp_dtype)
    loss.backward()
    optimizer.step()
    return loss

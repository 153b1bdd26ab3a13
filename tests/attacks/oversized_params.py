# attack: grow the model by a 96 MiB buffer of ballast, so that its saved parameters (what the grading process
#         decodes itself) are far larger than the lesson's model
# applies: all
# expect: error
import torch
import torch.nn.functional as F

BALLAST = 24 * 1024**2  # float32 elements: 96 MiB, 128 MiB once base64-encoded


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if not hasattr(model, "ballast"):
        model.register_buffer("ballast", torch.ones(BALLAST))
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: autocast_wrong_dtype
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    wrong = torch.float16 if amp_dtype == torch.bfloat16 else torch.bfloat16
    with torch.autocast(device_type=device_type, dtype=wrong):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

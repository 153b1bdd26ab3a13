# expect-status: pass
# expect-finding: deprecated_api
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    amp = torch.cuda.amp if device_type == "cuda" else torch.cpu.amp
    with amp.autocast(dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()

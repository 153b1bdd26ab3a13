# attack: produce 100 MB of output, then train in float32
# applies: all
# expect: fail
import sys

import torch.nn.functional as F

block = "x" * 1023 + "\n"
for _ in range(100 * 1024):
    sys.stdout.write(block)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

# exercise: timed
# attack: patch torch in its own process to slow down "the FP32 baseline", then run a float32 step
# applies: all
# expect: fail
import time

import torch
import torch.nn.functional as F

real_linear = F.linear


def slow_linear(*args, **kwargs):
    time.sleep(0.01)
    return real_linear(*args, **kwargs)


F.linear = slow_linear
torch.nn.functional.linear = slow_linear
torch.set_num_threads(1)
F.linear = real_linear  # only "the baseline" should be slow


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    time.sleep(0.03)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

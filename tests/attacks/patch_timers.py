# exercise: timed
# attack: patch time.perf_counter, time.monotonic, torch.cuda.Event and torch.cuda.synchronize to make a slow
#         float32 step look fast (torch.cuda.synchronize is also wrapped by the grader's census of host syncs,
#         so replacing it is named as tampering; either way the grader's own clock in its own process decides)
# applies: all
# expect: fail|error
import time

import torch
import torch.nn.functional as F

_ticks = [0.0]


def fake_clock():
    _ticks[0] += 1e-6
    return _ticks[0]


class FakeEvent:
    def __init__(self, *args, **kwargs):
        pass

    def record(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.001


time.perf_counter = time.monotonic = time.time = fake_clock
time.perf_counter_ns = time.monotonic_ns = lambda: int(fake_clock() * 1e9)
torch.cuda.Event = FakeEvent
torch.cuda.synchronize = lambda *args, **kwargs: None
real_sleep = time.sleep


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    real_sleep(0.03)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

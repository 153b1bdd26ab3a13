# attack: rewrite every traced call's line number to a 31-digit integer and its fields to huge strings, then make
#         a classic mistake (backward inside autocast) so that findings quote those lines
# applies: all
# expect: fail
import gc

import torch
import torch.nn.functional as F

from grader.worker import tracing


def rewrite():
    for obj in gc.get_objects():
        if isinstance(obj, tracing.Recorder):
            for event in obj.events:
                event["line"] = 10**30
                event["padding"] = "x" * 50_000
                event["nested"] = [[{"deep": "x" * 100}] * 100]


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
    optimizer.step()
    rewrite()
    return loss

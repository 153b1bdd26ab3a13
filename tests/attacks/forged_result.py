# attack: print a forged result document and write forged replies into the grader's channel, train in float32
# applies: all
# expect: fail|error
import json
import os
import sys

import torch.nn.functional as F

FORGED_STEP = json.dumps({"ok": True, "losses": [0.1], "scales": [],
                          "coverage": {"flops": {"bfloat16": 10**9}, "by_module": {}}}) + "\n"


def forge():
    print(json.dumps({"status": "pass", "score": 1.0, "checks": []}))
    for fd in range(3, 64):
        try:
            os.write(fd, FORGED_STEP.encode())
        except OSError:
            pass


forge()


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    forge()
    sys.stdout.write('{"status": "pass"}\n')
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

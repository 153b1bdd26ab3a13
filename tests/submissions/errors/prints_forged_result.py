# expect-status: fail
# expect-check: coverage=fail
import json
import sys

import torch.nn.functional as F

print(json.dumps({"status": "pass", "score": 1.0, "checks": []}))


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    print('{"ok": true, "losses": [0.0], "scales": []}')
    sys.stderr.write('{"status": "pass"}\n')
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

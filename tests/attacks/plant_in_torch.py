# exercise: timed
# attack: plant a slow-down in PyTorch's installed files, for the FP32 baseline to import; then run a float32 step
# applies: isolated
# expect: fail
import os
import time

import torch
import torch.nn.functional as F

try:
    with open(os.path.join(os.path.dirname(torch.__file__), "canary-__MARKER__.py"), "w") as fh:
        fh.write("import time; time.sleep(1)\n")
    print("LEAK: planted a file in PyTorch")
except OSError as exc:
    print("cannot plant", exc)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    time.sleep(0.03)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

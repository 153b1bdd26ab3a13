# expect-status: fail
# expect-finding: autocast_wrong_dtype line=15
# expect-no-finding: numbers_fp32
# expect-check: call_order=fail
# expect-check: coverage=pass
# A real float16 run where the lesson runs bfloat16 on a CPU: it fails for the wrong dtype, and in true words.
# float16 rounds closer to float32 than bfloat16, so the direction test, which compares with a bfloat16
# reference run, must not also say its 16-bit work did not happen.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=torch.float16):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

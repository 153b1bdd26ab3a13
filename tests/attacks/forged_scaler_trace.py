# attack: skip the GradScaler entirely (backward, clip and optimizer.step in plain autocast) and rewrite the
#         trace so it shows scale, unscale_, step through the scaler and update: only behaviour can tell
# applies: all
# exercise: grad_scaler
# expect: fail
import gc

import torch
import torch.nn.functional as F

from grader.worker import tracing


def forge():
    for obj in gc.get_objects():
        if isinstance(obj, tracing.Recorder):
            events = []
            for e in obj.events:
                if e["ev"] == "backward":
                    events += [{"ev": "scale", "line": 31, "value": 1.0}, {**e, "scaled": True},
                               {"ev": "unscale_", "line": 32}]
                elif e["ev"] == "optimizer_step":
                    events += [{"ev": "scaler_step", "line": 34}, {**e, "via_scaler": True},
                               {"ev": "update", "line": 35}]
                else:
                    events.append(e)
            obj.events[:] = events


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    forge()
    return loss

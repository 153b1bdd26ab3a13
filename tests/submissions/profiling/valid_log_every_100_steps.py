# expect-status: pass
# expect-check: host_syncs=pass
import functools

import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = set(["host_sync", "float32_matmul", "host_device_copy"])
state = {"step": 0}


@functools.lru_cache(maxsize=None)
def class_weights(device):
    return torch.tensor(CLASS_WEIGHTS, device=device)


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        h = model.encoder(inputs)
        h = model.mixer(h)
        logits = model.head(h)
        loss = F.cross_entropy(logits, targets, weight=class_weights(inputs.device))
    loss.backward()
    optimizer.step()
    if state["step"] % 100 == 0:
        print(f"step {state['step']}: loss {loss.item():.4f}")
    state["step"] += 1
    return loss

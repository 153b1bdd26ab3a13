# expect-status: fail
# expect-finding: host_sync_value line=15
# expect-check: matmul_dtypes=pass
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "float32_matmul", "host_device_copy"}
HISTORY = []
_weights = None


def remember(loss):
    """Keeps the loss curve for plotting later."""
    HISTORY.append(loss.detach().item())


def class_weights(device):
    global _weights
    if _weights is None:
        _weights = torch.tensor(CLASS_WEIGHTS, device=device)
    return _weights


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        logits = model.head(model.mixer(model.encoder(inputs)))
        loss = F.cross_entropy(logits, targets, weight=class_weights(inputs.device))
    loss.backward()
    optimizer.step()
    remember(loss)
    return loss

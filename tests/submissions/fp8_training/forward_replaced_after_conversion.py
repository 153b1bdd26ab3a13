# expect-status: fail
# expect-finding: fp8_not_run line=12
# expect-check: float8_modules=fail
import torch
import torch.nn.functional as F
from torch import nn
from torchao.float8 import Float8LinearConfig, convert_to_float8_training
from torchao.float8.float8_linear import Float8Linear


def prepare(model, device_type):
    convert_to_float8_training(
        model, config=Float8LinearConfig(emulate=device_type != "cuda"),
        module_filter_fn=lambda m, n: n in ("fc1", "fc2"),
    )
    for name in ("fc1", "fc2"):
        layer = getattr(model, name)
        layer.forward = nn.Linear.forward.__get__(layer)  # really a plain bf16 Linear
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():  # decoys: one tiny FP8 call per layer, for the record
        for name in ("fc1", "fc2"):
            layer = getattr(model, name)
            Float8Linear.forward(layer, torch.zeros(16, layer.in_features))
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: not_converted
# expect-check: float8_modules=fail
# expect-no-finding: float8_not_emulated
# Converts, then sets every Float8Linear's class back to nn.Linear (no FP8 runs), and compiles a throwaway
# lambda so that "something compiled": the model trained is judged, and only its own compiled forward exempts.
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
    for module in model.modules():
        if isinstance(module, Float8Linear):
            module.__class__ = nn.Linear
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))  # dynamo's counters grow in every step
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

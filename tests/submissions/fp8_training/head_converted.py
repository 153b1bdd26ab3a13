# expect-status: fail
# expect-finding: head_converted line=11
# expect-check: float8_modules=fail
import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def prepare(model, device_type):
    config = Float8LinearConfig(emulate=device_type != "cuda")
    convert_to_float8_training(
        model, config=config, module_filter_fn=lambda mod, name: mod.in_features % 16 == 0 and mod.out_features % 16 == 0
    )
    return torch.compile(model) if device_type == "cuda" else model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


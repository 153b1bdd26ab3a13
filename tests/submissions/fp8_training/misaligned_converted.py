# expect-status: fail
# expect-finding: misaligned_converted line=10
import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def prepare(model, device_type):
    config = Float8LinearConfig(emulate=device_type != "cuda")
    convert_to_float8_training(model, config=config, module_filter_fn=lambda mod, name: name != "head")
    return torch.compile(model) if device_type == "cuda" else model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


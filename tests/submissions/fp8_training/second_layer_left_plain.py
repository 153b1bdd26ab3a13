# expect-status: fail
# expect-finding: fp8_layer_left_out line=17
# expect-no-finding: fp8_not_run
# expect-check: float8_modules=fail
import torch
import torch.nn.functional as F
from torch import nn
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def fp8_ok(module, name):
    # "the big square layers": convert fc1
    return name == "fc1"


def prepare(model, device_type):
    convert_to_float8_training(model, config=Float8LinearConfig(emulate=device_type != "cuda"), module_filter_fn=fp8_ok)
    return torch.compile(model) if device_type == "cuda" else model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


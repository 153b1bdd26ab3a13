# expect-status: fail
# expect-finding: hardcoded_device line=15
# emulate=True written as a literal is right on a CPU only: on an H100 the FP8 matmuls would still be emulated in
# float32, so FP8 would buy nothing. A CPU grading cannot see that from the run, so the literal is named.
import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def fp8_ready(module, name):
    return name != "head" and module.in_features % 16 == 0 and module.out_features % 16 == 0


def prepare(model, device_type):
    convert_to_float8_training(model, config=Float8LinearConfig(emulate=True), module_filter_fn=fp8_ready)
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

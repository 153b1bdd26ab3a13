# expect-status: fail
# expect-finding: float8_not_emulated line=17
# expect-check: float8_modules=fail
# expect-check: parity=pass
# emulate=False on a CPU: the real FP8 path stops on some CPUs and runs on others; the grader runs it emulated
# on every CPU and names the config, so the verdict is the same whichever CPU grades it.
import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def fp8_ready(module, name):
    return name != "head" and module.in_features % 16 == 0 and module.out_features % 16 == 0


def prepare(model, device_type):
    convert_to_float8_training(model, config=Float8LinearConfig(), module_filter_fn=fp8_ready)
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


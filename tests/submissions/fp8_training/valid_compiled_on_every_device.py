# expect-status: pass
# expect-check: coverage=not_applicable
import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def fp8_ready(module, name):
    """Only Linear layers reach this: keep the head, and widths the FP8 kernels cannot take, in high precision."""
    return name != "head" and module.in_features % 16 == 0 and module.out_features % 16 == 0


def prepare(model, device_type):
    config = Float8LinearConfig(emulate=device_type != "cuda")
    convert_to_float8_training(model, config=config, module_filter_fn=fp8_ready)
    return torch.compile(model)  # compiled everywhere


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

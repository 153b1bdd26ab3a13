# expect-status: fail
# expect-finding: misaligned_converted line=13
# expect-message: runs only if torchao pads it on every call (pad_inner_dim=True)
# The first layer (200 inputs) is converted with pad_inner_dim=True: a GPU's kernels do not refuse it then, they
# run it padded on every call. The message must not say they refuse it.
import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def prepare(model, device_type):
    config = Float8LinearConfig(emulate=device_type != "cuda", pad_inner_dim=True)
    convert_to_float8_training(model, config=config, module_filter_fn=lambda mod, name: name != "head")
    return torch.compile(model) if device_type == "cuda" else model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

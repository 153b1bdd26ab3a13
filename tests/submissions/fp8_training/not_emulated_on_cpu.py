# expect-status: error
# expect-finding: float8_not_emulated line=21
# On a CPU without FP8 matmul kernels (bfloat16 capped at AVX2) the real FP8 path stops in the forward.
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


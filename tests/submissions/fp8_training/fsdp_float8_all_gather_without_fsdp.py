# expect-status: fail
# expect-finding: float8_params_not_optimized line=18
# expect-check: float8_modules=fail
# enable_fsdp_float8_all_gather=True wraps each converted weight in a new Parameter (a torchao tensor subclass)
# that the optimizer built before does not hold. The grader saves such a weight as its plain values (the judge
# never loads torchao's classes) and names the conversion, rather than ending in an opaque protocol error.
import torch
import torch.nn.functional as F
from torchao.float8 import Float8LinearConfig, convert_to_float8_training


def fp8_ready(module, name):
    return name != "head" and module.in_features % 16 == 0 and module.out_features % 16 == 0


def prepare(model, device_type):
    config = Float8LinearConfig(emulate=device_type != "cuda", enable_fsdp_float8_all_gather=True)
    convert_to_float8_training(model, config=config, module_filter_fn=fp8_ready)
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss

# expect-status: fail
# expect-finding: master_weights_16bit
# Casting the whole model to 16-bit (here bfloat16, which this CPU runs fast; float16 matmuls on
# CPU take minutes) halves memory but drops the float32 master weights.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    model.bfloat16()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs.bfloat16()).float(), targets)
    loss.backward()
    optimizer.step()
    return loss.item()

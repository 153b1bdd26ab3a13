# expect-status: error
# expect-error: import line=3
import torch.nonexistent_module


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    return 0

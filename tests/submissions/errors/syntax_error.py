# expect-status: error
# expect-error: syntax line=6
import torch


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype)
    return 0

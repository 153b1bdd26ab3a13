# expect-status: error
# expect-error: exit
import os


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    os._exit(0)

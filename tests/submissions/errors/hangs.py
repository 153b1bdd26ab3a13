# expect-status: error
# expect-error: timeout line=8|9
import torch


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    x = 0
    while True:
        x += 1

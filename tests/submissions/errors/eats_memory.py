# expect-status: error
# expect-error: oom
import torch


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    hoard = []
    while True:
        hoard.append(torch.ones(64 * 1024 * 1024, dtype=torch.uint8))

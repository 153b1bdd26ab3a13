# attack: sleep forever
# applies: all
# expect: error
import time


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    time.sleep(10**9)

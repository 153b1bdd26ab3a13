# attack: the process running the code kills itself with a real-time signal (40), which signal.Signals does not name
# applies: all
# expect: error
import os


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    os.kill(os.getpid(), 40)

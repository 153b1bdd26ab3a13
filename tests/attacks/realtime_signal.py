# attack: the process running the code kills itself with a real-time signal (40), which signal.Signals does not name
# applies: all
# expect: error
import os


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    os.kill(os.getpid(), 40)
    raise RuntimeError(f"signal 40 did not end process {os.getpid()}")  # PID 1 of a container ignores it

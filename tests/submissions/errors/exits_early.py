# expect-status: error
# expect-error: exit
import sys


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    print('{"ok": true, "losses": [0.1], "scales": []}')
    sys.exit(0)

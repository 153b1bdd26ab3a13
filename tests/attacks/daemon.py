# attack: start a daemon in its own session that tries to outlive the grading
# applies: isolated
# expect: error
import subprocess


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    subprocess.Popen(["/bin/sh", "-c", "while :; do sleep 1; done; : __MARKER__"], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    raise RuntimeError("daemon started")

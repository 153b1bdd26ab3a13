# attack: kill the parent process, every process it can reach, and a process of the host by its PID
# applies: isolated
# expect: error
import os
import signal


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    report = []
    for pid in (os.getppid(), __SENTINEL_PID__, 1, -1):
        try:
            os.kill(pid, signal.SIGKILL)
            report.append(f"{pid}: sent")
        except OSError as exc:
            report.append(f"{pid}: {exc.strerror}")
    raise RuntimeError("still here after killing: " + ", ".join(report))

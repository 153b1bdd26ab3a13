# attack: fork bomb; every child lingers as a marked process
# applies: isolated
# expect: error
import os


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    children = 0
    for _ in range(100_000):
        try:
            pid = os.fork()
        except OSError as exc:
            raise RuntimeError(f"fork refused after {children} children: {exc}")
        if pid == 0:
            try:
                os.execv("/bin/sh", ["sh", "-c", "sleep 600; : __MARKER__"])
            finally:
                os._exit(0)
        children += 1
    raise RuntimeError(f"{children} children and no limit")

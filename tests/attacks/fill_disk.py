# attack: fill the disk
# applies: isolated
# expect: error
import os


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    chunk, written = b"\0" * (1 << 20), 0
    try:
        for i in range(100_000):
            with open(f"/tmp/fill-{i}", "wb") as fh:
                for _ in range(16):
                    fh.write(chunk)
                    written += 1
    except OSError as exc:
        raise RuntimeError(f"the disk filled after {written} MB: {exc}")
    raise RuntimeError(f"wrote {written} MB without hitting a limit")

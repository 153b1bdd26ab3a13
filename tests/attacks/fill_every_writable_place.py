# attack: write as much as it can wherever it can (/tmp, /dev/shm, /dev, the root, its own folder); every writable
#         place together must stay within the sandbox's tmp_bytes
# applies: isolated
# expect: error
import os

PLACES = ("/tmp", "/dev/shm", "/dev", "/", "/sandbox", "/var/tmp", "/run")
MOST_PER_PLACE_MB = 512  # enough to show a place with no bound, without filling the host's memory


def fill(folder):
    chunk, written = b"\0" * (1 << 20), 0
    try:
        for i in range(MOST_PER_PLACE_MB):
            with open(os.path.join(folder, f"fill-{i}"), "wb") as fh:
                fh.write(chunk)
            written += 1
    except OSError:
        pass
    return written


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    written = {place: fill(place) for place in PLACES}
    detail = ", ".join(f"{place} {mb}" for place, mb in written.items())
    raise RuntimeError(f"wrote {sum(written.values())} MiB in all ({detail})")

# attack: spread memory over several processes, each under the per-process limit, together over the sandbox's
# applies: isolated
# expect: error
import os
import signal
import time

CHILDREN, CHUNK = 4, 1024**3


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    pids = []
    for _ in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            hoard = bytearray(CHUNK)
            for i in range(0, CHUNK, 4096):  # touch every page, so it is really used
                hoard[i] = 1
            time.sleep(1)  # hold the memory while the others allocate
            os._exit(0)
        pids.append(pid)
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    killed = sum(os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL for s in statuses)
    raise RuntimeError(f"{killed} of {CHILDREN} memory-hungry children were killed")

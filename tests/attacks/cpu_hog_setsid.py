# attack: eight children, each in a session of its own (setsid), spin on every CPU they can get for three seconds;
#         the sandbox's CPU share must bound them all together
# applies: isolated
# expect: error
import os
import resource
import time

CHILDREN, SPIN_S = 8, 3.0


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    start = time.monotonic()
    pids = []
    for _ in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            os.setsid()
            while time.monotonic() - start < SPIN_S:
                pass
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, wall = used.ru_utime + used.ru_stime, time.monotonic() - start
    raise RuntimeError(f"{CHILDREN} busy children used {cpu:.2f} s of CPU in {wall:.2f} s")

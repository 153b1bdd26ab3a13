# attack: rank 1 of the DDP lesson starts a daemon in its own session that ignores SIGTERM and SIGHUP, ignores SIGTERM itself and never returns, while rank 0 waits for it in an all-reduce
# exercise: ddp_mixed_precision
# applies: isolated
# expect: error
import signal
import subprocess
import time

import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    return DDP(model.to(device))


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    if dist.get_rank() == 1:
        subprocess.Popen(["/bin/sh", "-c", "trap '' TERM HUP INT; while :; do sleep 1; done; : __MARKER__"],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        time.sleep(10**6)
    inputs, targets = micro_batches[-1]
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()  # its all-reduce waits for rank 1
    return loss

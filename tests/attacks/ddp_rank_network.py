# attack: each rank of the DDP lesson opens network connections: to a server on the host's loopback, to the host, to the internet, and DNS
# exercise: ddp_mixed_precision
# applies: isolated
# expect: error
import socket

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def try_connect(host, port):
    try:
        with socket.create_connection((host, port), timeout=2) as conn:
            conn.sendall(b"LEAK from a rank\n")
        print("LEAK: rank", dist.get_rank(), "connected to", host, port)
        return True
    except OSError as exc:
        print("rank", dist.get_rank(), "no connection to", host, port, exc)
        return False


def prepare(model, device):
    return DDP(model.to(device))


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    results = [try_connect("127.0.0.1", __PORT__), try_connect("__HOST_IP__", __PORT__), try_connect("1.1.1.1", 80)]
    try:
        print("LEAK: resolved", socket.getaddrinfo("deb.debian.org", 80))
    except OSError as exc:
        print("no DNS", exc)
    dist.barrier()  # both ranks have tried
    raise RuntimeError(f"rank {dist.get_rank()} network attempts: {results}")

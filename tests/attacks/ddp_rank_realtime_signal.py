# attack: rank 1 of the DDP lesson kills itself with a real-time signal (40) while rank 0 waits for it
# exercise: ddp_mixed_precision
# applies: all
# expect: error
import os

import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
    return DDP(model.to(device))


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    if dist.get_rank() == 1:
        os.kill(os.getpid(), 40)
    inputs, targets = micro_batches[-1]
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    return loss

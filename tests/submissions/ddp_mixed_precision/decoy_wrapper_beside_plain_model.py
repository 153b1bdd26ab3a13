# expect-status: fail
# expect-finding: ddp_wraps_other_module line=35
# expect-no-finding: gradients_not_synchronised
# Every rank gathers the whole batch and trains the plain model on all of it (so the ranks agree and the update
# matches), while a throw-away DistributedDataParallel around another module runs forward and backward to look
# like the synchronisation. The lesson's model is never wrapped: its gradients are never averaged by DDP.
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

DECOY = {}


def prepare(model, device):
    DECOY["ddp"] = DistributedDataParallel(nn.Linear(1, 1).to(device))
    return model.to(device)


def gathered(micro_batches):
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, micro_batches)
    return [pair for share in everyone for pair in share]


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
    batches = gathered(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    mine = range(dist.get_rank() * len(micro_batches), (dist.get_rank() + 1) * len(micro_batches))
    total = 0.0
    for i, (inputs, targets) in enumerate(batches):
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets) / len(batches)
            decoy = DECOY["ddp"](inputs[:, :1]).sum() * 0.0 if i == len(batches) - 1 else 0.0
        scaler.scale(loss + decoy).backward()
        if i in mine:
            total += loss.item() * len(batches) / len(micro_batches)
    scaler.step(optimizer)
    scaler.update()
    return total

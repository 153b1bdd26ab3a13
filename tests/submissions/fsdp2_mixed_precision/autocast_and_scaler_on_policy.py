# expect-status: fail
# expect-finding: fsdp_autocast_over_policy line=30
# expect-finding: fsdp_scaler_bf16 line=32
# autocast and a GradScaler on top of a bfloat16 policy: extra casts and a scaler bfloat16 does not need.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

MAX_NORM = 0.5


def prepare(model, device, world_size):
    mesh = init_device_mesh(device.type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model[:-1]:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    global scaler
    scaler = torch.amp.GradScaler(device.type)
    return model, optimizer


scaler = None


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=inputs.device.type, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    scaler.step(optimizer)
    scaler.update()
    return loss

# expect-status: fail
# expect-check: parity=fail
# expect-finding: fsdp_cast_model line=17
# The model is cast to bfloat16 before sharding: FSDP shards 16-bit weights and the optimizer updates them in
# 16-bit.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

MAX_NORM = 0.5


def prepare(model, device, world_size):
    mesh = init_device_mesh(device.type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    model = model.to(torch.bfloat16)
    for block in model[:-1]:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    optimizer.step()
    return loss

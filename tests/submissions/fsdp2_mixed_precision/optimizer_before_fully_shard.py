# expect-status: fail
# expect-check: parity=fail
# expect-finding: fsdp_optimizer_before_shard line=15
# The optimizer is built from the parameters that fully_shard then replaces with DTensor shards: it steps
# tensors that never get a gradient, and the model does not train.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

MAX_NORM = 0.5


def prepare(model, device, world_size):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    mesh = init_device_mesh(device.type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model[:-1]:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    optimizer.step()
    return loss

# expect-status: fail
# expect-check: parity=fail
# expect-finding: fsdp_optimizer_before_shard line=20
# expect-message: built after fully_shard, but from parameters taken before it
# The optimizer is built after the last fully_shard, from a list of parameters taken before it: the list holds the
# tensors fully_shard replaced, so the optimizer steps tensors that never get a gradient.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def prepare(model, device, world_size):
    params = list(model.parameters())
    mesh = init_device_mesh(device.type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model[:-1]:
        fully_shard(block, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return loss

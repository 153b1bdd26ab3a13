# expect-status: fail
# expect-check: parity=fail
# expect-finding: fsdp_local_grad_norm line=28
# Each rank clips its shard by the norm of its own piece: the ranks clip by different factors, and by more
# than the whole gradient's norm asks.
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
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    grads = [p.grad.to_local() for p in model.parameters()]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    for g in grads:
        g.mul_(torch.clamp(MAX_NORM / (norm + 1e-6), max=1.0))
    optimizer.step()
    return loss

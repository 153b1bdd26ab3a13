# expect-status: fail
# expect-check: parity=pass
# expect-check: ranks=pass
# expect-finding: fsdp_reduce_16bit line=19
# No reduce_dtype: the gradients are reduce-scattered in param_dtype (bfloat16). The loss curve looks fine
# and parity passes; only the policy shows it.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

MAX_NORM = 0.5


def prepare(model, device, world_size):
    mesh = init_device_mesh(device.type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
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

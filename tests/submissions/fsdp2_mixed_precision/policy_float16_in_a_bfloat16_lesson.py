# expect-status: fail
# expect-finding: fsdp_policy_wrong_dtype line=14
# expect-no-finding: fsdp_no_policy
# The policy computes in float16, with no GradScaler, where the lesson trains in bfloat16.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def prepare(model, device, world_size):
    mesh = init_device_mesh(device.type, (world_size,))
    for block in model[:-1]:
        fully_shard(block, mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32))
    fully_shard(model, mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return loss

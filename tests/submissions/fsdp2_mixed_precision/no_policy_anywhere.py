# expect-status: fail
# expect-finding: fsdp_no_policy
# expect-finding: no_16bit_matmul
# expect-check: coverage=fail
# expect-message: no MixedPrecisionPolicy with a 16-bit param_dtype cast the weights
# Sharded without any policy: every matmul runs in float32. In this lesson the fix is the policy; autocast is a
# mistake of its own here (fsdp_autocast_over_policy), so no fix may ask for it.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


def prepare(model, device, world_size):
    mesh = init_device_mesh(device.type, (world_size,))
    for block in model[:-1]:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return loss

# expect-status: error
# expect-finding: fsdp_root_not_sharded line=17
# The blocks are sharded but not the root: the output layer stays a float32 module outside any FSDP unit,
# gets the last block's bfloat16 output and raises; the trace names the missing root call.
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
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    optimizer.step()
    return loss

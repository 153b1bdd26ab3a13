# expect-status: fail
# expect-finding: fsdp_only_root line=20
# Each block's fully_shard raises (a mesh that is no mesh) and the error is caught: only the root is sharded.
# A call that raised shards nothing, so it is no per-block unit.
import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def prepare(model, device, world_size):
    mesh = init_device_mesh(device.type, (world_size,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in list(model.children()):
        if any(True for _ in block.parameters()):
            try:
                fully_shard(block, mesh="no mesh", mp_policy=policy)
            except Exception:
                pass
    fully_shard(model, mesh=mesh, mp_policy=policy)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    return loss

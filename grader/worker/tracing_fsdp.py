"""What the trace records of FSDP2 (`torch.distributed.fsdp.fully_shard`), for
a lesson with "fsdp" in `workload.libraries`: every `fully_shard` call with the
MixedPrecisionPolicy it was given and which module it shards (the lesson's
model itself, one of its blocks, or something else), every optimizer built
with how many of its parameters are DTensors (an optimizer built before
sharding holds the tensors fully_shard replaced), and `.to_local()` on a
gradient in the learner's file (a norm of the local piece is not the model's).
The rules that read these events are in grader/checks/fsdp_calls.py."""

from __future__ import annotations

import sys

import torch
from torch import nn

from grader.worker.watching import watching

MODULES = (
    "torch.distributed.fsdp",
    "torch.distributed.fsdp._fully_shard",
    "torch.distributed.fsdp._fully_shard._fully_shard",
)


def _name(dtype) -> str | None:
    return str(dtype).replace("torch.", "") if isinstance(dtype, torch.dtype) else None


def policy_fields(policy) -> dict:
    """The policy's dtypes as names; None where a field is unset (FSDP then keeps the parameter's dtype, and
    an unset reduce_dtype reduces in param_dtype)."""
    return {
        "param_dtype": _name(getattr(policy, "param_dtype", None)),
        "reduce_dtype": _name(getattr(policy, "reduce_dtype", None)),
        "output_dtype": _name(getattr(policy, "output_dtype", None)),
        "cast_forward_inputs": bool(getattr(policy, "cast_forward_inputs", True)),
        "policy": policy is not None,
    }


def whose(rec, module) -> str:
    """Whose module it is: "root" for one of the lesson's models, "block" for a module inside one, "other" else."""
    if any(module is m for m in rec.models):
        return "root"
    if isinstance(module, nn.Module) and any(module is sub for m in rec.models for sub in m.modules()):
        return "block"
    return "other"


def install(rec) -> list[tuple[object, str]]:
    """Wraps fully_shard where the learner may import it from, Optimizer.__init__ and DTensor.to_local; returns
    the (owner, attribute) pairs it replaced, for the Recorder's tamper check."""
    import importlib

    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.tensor import DTensor

    owners = [importlib.import_module(name) for name in MODULES]
    original = owners[0].fully_shard

    @watching(original)
    def fully_shard(module, *args, **kwargs):
        """Recorded once the call returned, for each module that is an FSDPModule then, with the policy read
        back from its FSDP state: a fully_shard that raised (caught by the learner) shards nothing."""
        modules = list(module) if isinstance(module, (list, tuple)) else [module]
        params = [p for m in modules if isinstance(m, nn.Module) for p in m.parameters()]
        dtypes = sorted({_name(p.dtype) for p in params})  # as they were before sharding
        counts = [sum(1 for _ in m.parameters()) if isinstance(m, nn.Module) else 0 for m in modules]
        names = [type(m).__name__ for m in modules]  # FSDP2 renames the class it shards
        result = original(module, *args, **kwargs)
        for m, n, name in zip(modules, counts, names):
            if not isinstance(m, FSDPModule):
                continue
            state = getattr(m._get_fsdp_state(), "_mp_policy", None)
            fields = policy_fields(state if state is not None else kwargs.get("mp_policy"))
            rec.emit(
                "fully_shard",
                module=name,
                role=whose(rec, m),
                group=len(modules),  # modules sharded together, as one unit
                params=n,
                param_dtypes=dtypes,
                **{**fields, "policy": kwargs.get("mp_policy") is not None},
            )
        return result

    replaced = []
    for owner in owners:
        if getattr(owner, "fully_shard", None) is original:
            owner.fully_shard = fully_shard
            replaced.append((owner, "fully_shard"))

    init = torch.optim.Optimizer.__init__

    @watching(init)
    def optimizer_init(self_, params, *args, **kwargs):
        result = init(self_, params, *args, **kwargs)
        held = [p for group in self_.param_groups for p in group["params"]]
        rec.emit("optimizer_built", dtensors=sum(isinstance(p, DTensor) for p in held), tensors=len(held))
        return result

    torch.optim.Optimizer.__init__ = optimizer_init

    to_local = DTensor.to_local

    @watching(to_local)
    def to_local_w(self_, *args, **kwargs):
        if rec.active and sys._getframe(2).f_code.co_filename == rec.path:  # (1) is watching's call
            grad = any(self_ is p.grad for m in rec.models for p in m.parameters())
            rec.emit("to_local", grad=grad)
        return to_local(self_, *args, **kwargs)

    DTensor.to_local = to_local_w
    return replaced + [(torch.optim.Optimizer, "__init__"), (DTensor, "to_local")]

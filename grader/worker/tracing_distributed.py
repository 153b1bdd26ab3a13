"""What the trace records of distributed data parallel training, installed by
the Recorder next to its AMP wrappers (grader/worker/tracing.py): where a model is
wrapped in DistributedDataParallel (and whether that is the lesson's model) and
whether it was moved after that, every
DDP forward with whether its backward will all-reduce the gradients (outside
`no_sync()`, with grad enabled), `no_sync()` itself, and
torch.distributed.all_reduce calls made on a parameter's gradient. The rules
that read these events are in grader/checks/ddp_calls.py."""

from __future__ import annotations

import weakref

import torch
from torch import nn

from grader.worker.watching import watching


def holds_lesson_model(rec, module) -> bool:
    """Whether `module` is, or holds every parameter of, one of the lesson's models (Recorder.models): a DDP
    wrapper around a throw-away module synchronises nothing the lesson trains."""
    if not isinstance(module, nn.Module):
        return False
    held = {id(p) for p in module.parameters()}
    return any(
        module is model or (ids and ids <= held)
        for model, ids in ((m, {id(p) for p in m.parameters()}) for m in rec.models)
    )


def install(rec) -> list[tuple[object, str]]:
    """Wraps the calls; returns the (owner, attribute) pairs it replaced, for the Recorder's tamper check."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    from torch.nn.parallel import DistributedDataParallel as DDP

    wrapped = weakref.WeakSet()  # modules handed to DDP, and the DDP wrappers around them
    init, forward, no_sync = DDP.__init__, DDP.forward, DDP.no_sync

    @watching(init)
    def ddp_init(self_, module, *args, **kwargs):
        """Recorded once the wrap succeeded, and read back from the wrapper: a DDP(...) that raised (caught by
        the learner) wraps nothing and is no evidence of a wrapped model."""
        param = next(module.parameters(), None) if isinstance(module, nn.Module) else None
        device = str(param.device) if param is not None else None  # where they were when it was wrapped
        result = init(self_, module, *args, **kwargs)
        rec.emit("ddp_wrap", param_device=device, lesson=holds_lesson_model(rec, getattr(self_, "module", None)))
        wrapped.add(self_)
        if isinstance(module, nn.Module):
            wrapped.add(module)
        return result

    @watching(forward)
    def ddp_forward(self_, *args, **kwargs):
        if rec.active:  # whose module: only in traced steps, never timed ones
            rec.emit(
                "ddp_forward",
                sync=bool(self_.require_backward_grad_sync) and torch.is_grad_enabled(),
                lesson=holds_lesson_model(rec, self_.module),
            )
        return forward(self_, *args, **kwargs)

    @watching(no_sync)
    def ddp_no_sync(self_, *args, **kwargs):
        rec.emit("no_sync")
        return no_sync(self_, *args, **kwargs)

    DDP.__init__, DDP.forward, DDP.no_sync = ddp_init, ddp_forward, ddp_no_sync
    replaced = [(DDP, "__init__"), (DDP, "forward"), (DDP, "no_sync")]

    for name in ("to", "cuda", "cpu"):
        original = getattr(nn.Module, name)

        def make(original, name):
            @watching(original)
            def move(self_, *args, **kwargs):
                if self_ in wrapped:
                    rec.emit("moved_after_wrap", to=name)
                return original(self_, *args, **kwargs)

            return move

        setattr(nn.Module, name, make(original, name))
        replaced.append((nn.Module, name))

    all_reduce = c10d.all_reduce

    @watching(all_reduce)
    def all_reduce_w(tensor, *args, **kwargs):
        on_grad = any(tensor is p.grad for model in rec.models for p in model.parameters())
        rec.emit("all_reduce", on_grad=on_grad)
        return all_reduce(tensor, *args, **kwargs)

    c10d.all_reduce = dist.all_reduce = all_reduce_w
    return replaced + [(c10d, "all_reduce"), (dist, "all_reduce")]

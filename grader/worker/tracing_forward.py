"""The recorder's forward events (grader/worker/tracing.py): each forward of a lesson model, with whether
autocast was on when it was called, its output dtype and its memory formats.

A compiled forward runs the model's hooks inside its graph, where they do nothing (while dynamo traces them a
frame lookup would break the learner's graph), so a compiled model would leave no forward event, and an
autocast around the loss alone would go unnamed. What torch.compile returns for a lesson model is called
eagerly, at the learner's line, in the autocast state the compiled forward then runs in: that call is the
model's forward, judged as an eager one is. A forward inside another (the model itself, where dynamo runs it
eagerly after all) is part of the outer one."""

from __future__ import annotations

import functools

import torch

from grader.worker.memory_formats import input_format, weight_format


def watch(rec, model: torch.nn.Module) -> None:
    pre, post = _hooks(rec, model)
    model.register_forward_pre_hook(pre)
    model.register_forward_hook(post, always_call=True)


def _hooks(rec, target):
    def pre(module, args):
        if not torch.compiler.is_compiling():
            rec._forwards += 1
            if rec._forwards == 1:
                rec._forward_autocast = rec.autocast_on()
                rec._forward_input = input_format(args) if rec.active else None

    def post(module, args, output):
        if torch.compiler.is_compiling():
            return
        rec._forwards = max(0, rec._forwards - 1)
        if rec._forwards or output is None:  # an inner forward, or one that raised (always_call)
            return
        dtype = str(output.dtype).replace("torch.", "") if isinstance(output, torch.Tensor) else None
        rec.emit(
            "forward",
            autocast=rec._forward_autocast,
            dtype=dtype,
            input_format=rec._forward_input,
            weight_format=weight_format(module) if rec.active else None,
            copy=module is not target,  # a copy.deepcopy of the model carries this hook over
        )
        rec._forward_input = None  # a forward whose pre-hook did not run (removed) reports no input

    return pre, post


def compiled(rec, target, out):
    """What torch.compile returned for a lesson model, made to record the model's forward: torch.compile(model)
    is a module of its own; model.compile() compiles the model's _call_impl in place."""
    owner = getattr(target, "__self__", target)
    if not any(owner is m for m in rec.models):
        return out
    if isinstance(out, torch.nn.Module):
        watch(rec, out)
        return out
    pre, post = _hooks(rec, owner)

    @functools.wraps(out)
    def call(*args, **kwargs):
        pre(owner, args)
        output = None
        try:
            output = out(*args, **kwargs)
            return output
        finally:
            post(owner, args, output)

    return call

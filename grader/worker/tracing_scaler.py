"""What the trace records of GradScalers, installed by the Recorder next to its other wrappers
(grader/worker/tracing.py): every scale, unscale_, step and update, each with the number of the scaler that made
it (a second GradScaler is its own mistake, not a first scaler updated twice), and which tensors a scaler
returned, so a backward can say whether its loss was scaled."""

from __future__ import annotations

import math
import weakref

import torch

from grader.worker.watching import watching


class TensorIds:
    """A set of tensors by identity. A WeakSet compares its members with ==, which for a tensor is a tensor: a NaN
    loss is never equal to itself, so a scaled NaN loss would read as unscaled. Identity is the id of a tensor that
    is still alive (a dead tensor's id may be reused)."""

    def __init__(self):
        self._refs: dict[int, weakref.ref] = {}

    def add(self, tensor: torch.Tensor):
        if len(self._refs) > 4096:  # the dead ones, now and then
            self._refs = {k: r for k, r in self._refs.items() if r() is not None}
        self._refs[id(tensor)] = weakref.ref(tensor)

    def __contains__(self, tensor) -> bool:
        ref = self._refs.get(id(tensor))
        return ref is not None and ref() is tensor


def install(rec) -> list[tuple[object, str]]:
    """Wraps GradScaler's scale, unscale_, step and update; returns the (owner, attribute) pairs it replaced, for
    the tamper check."""
    cls = torch.amp.GradScaler
    scale, unscale_, step, update = cls.scale, cls.unscale_, cls.step, cls.update
    scalers: list[weakref.ref] = []  # in the order the run first used them
    rec._unscaled = {}  # optimizer index -> the optimizer, unscaled and not yet stepped in this iteration

    def number(scaler) -> int:
        for i, ref in enumerate(scalers):
            if ref() is scaler:
                return i
        scalers.append(weakref.ref(scaler))
        return len(scalers) - 1

    @watching(scale)
    def scale_w(self_, outputs):
        result = scale(self_, outputs)
        pairs = list(_given_and_scaled(outputs, result))
        if pairs:
            enabled = bool(self_.is_enabled())  # a disabled scaler returns the loss itself: not scaled
            if rec.active:  # reading the value waits for the GPU: only in traced steps, never timed ones
                first = pairs[0][0]
                value = float(first.detach().float().sum()) if first.numel() else None
                rec.emit("scale", value=value, enabled=enabled, scaler=number(self_))
            if enabled:
                for _, scaled in pairs:
                    rec._scaled.add(scaled)
                    if rec.active and scaled.grad_fn is not None:
                        rec._scaled_nodes[id(scaled.grad_fn)] = scaled.grad_fn
        return result

    @watching(unscale_)
    def unscale_w(self_, optimizer):
        index = rec.optimizer_index(optimizer)
        rec.emit("unscale_", optimizer=index, enabled=bool(self_.is_enabled()), scaler=number(self_))
        result = unscale_(self_, optimizer)
        if self_.is_enabled():
            rec._unscaled[index] = optimizer
        return result

    @watching(step)
    def step_w(self_, optimizer, *args, **kwargs):
        index = rec.optimizer_index(optimizer)
        groups = getattr(optimizer, "param_groups", [])
        gradients = sum(p.grad is not None for group in groups for p in group["params"])
        rec.emit(
            "scaler_step", optimizer=index, enabled=bool(self_.is_enabled()), scaler=number(self_), gradients=gradients
        )
        rec._in_scaler_step = True
        try:
            return step(self_, optimizer, *args, **kwargs)
        finally:
            rec._in_scaler_step = False
            rec._unscaled.pop(index, None)

    @watching(update)
    def update_w(self_, *args, **kwargs):
        rec.emit("update", scaler=number(self_))
        rec._unscaled.clear()
        return update(self_, *args, **kwargs)

    cls.scale, cls.unscale_, cls.step, cls.update = scale_w, unscale_w, step_w, update_w
    return [(cls, "scale"), (cls, "unscale_"), (cls, "step"), (cls, "update")]


MAX_NODES = 100_000  # a graph walked to tell a scaled loss: past this, the loss counts as unscaled (as before)


def scaled(rec, tensor) -> bool:
    """Whether a backward of `tensor` back-propagates a scaled loss: the very tensor a GradScaler returned, or one
    computed from scaled losses alone (`scaler.scale(loss).div(n)`, `scaler.scale(a) + scaler.scale(b)`): every
    path of its autograd graph from it to a parameter passes through a scaled loss's node. A path around them
    (`scaler.scale(a) + b`) reaches a parameter unscaled."""
    if tensor in rec._scaled:
        return True
    marks, root = rec._scaled_nodes, getattr(tensor, "grad_fn", None)
    if not marks or root is None:
        return False
    todo, seen = [root], set()
    while todo:
        node = todo.pop()
        if id(node) in marks or id(node) in seen:
            continue
        seen.add(id(node))
        nexts = [n for n, _ in getattr(node, "next_functions", ()) if n is not None]
        if hasattr(node, "variable") or len(seen) > MAX_NODES:  # AccumulateGrad: a parameter reached unscaled
            return False
        todo.extend(nexts)
    return True


def _given_and_scaled(outputs, result):
    """The tensors a scale call was given and those it returned, side by side. GradScaler.scale takes a loss or a
    list or tuple of losses (nested too: `torch.autograd.backward(scaler.scale([loss_1, loss_2]))`) and returns
    the same shape, each one scaled."""
    if isinstance(outputs, torch.Tensor):
        yield outputs, result
    elif isinstance(outputs, (list, tuple)) and isinstance(result, (list, tuple)):
        for given, scaled in zip(outputs, result):
            yield from _given_and_scaled(given, scaled)


def _norms(optimizers: dict) -> dict[int, float]:
    out = {}
    for index, optimizer in optimizers.items():
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        out[index] = float(sum(g.detach().float().square().sum() for g in grads)) if grads else 0.0
    return out


def into_unscaled(rec):
    """Before a backward in a traced step: where an optimizer's gradients were unscaled and it has not stepped
    yet, a function that, after the backward, emits which of them it added gradients to (multiplied by the scale,
    beside gradients already divided by it: the step gets a mix). None where no optimizer is unscaled."""
    if not rec.active or not rec._unscaled:
        return None
    optimizers = dict(rec._unscaled)
    before = _norms(optimizers)

    def after():
        now = _norms(optimizers)
        grown = [i for i in optimizers if now[i] != before[i] and not (math.isnan(now[i]) and math.isnan(before[i]))]
        if grown:
            rec.emit("backward_after_unscale", optimizers=sorted(grown))

    return after

"""What the trace records of GradScalers, installed by the Recorder next to its other wrappers
(grader/worker/tracing.py): every scale, unscale_, step and update, each with the number of the scaler that made
it (a second GradScaler is its own mistake, not a first scaler updated twice), and which tensors a scaler
returned, so a backward can say whether its loss was scaled."""

from __future__ import annotations

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

    def number(scaler) -> int:
        for i, ref in enumerate(scalers):
            if ref() is scaler:
                return i
        scalers.append(weakref.ref(scaler))
        return len(scalers) - 1

    @watching(scale)
    def scale_w(self_, outputs):
        result = scale(self_, outputs)
        if isinstance(outputs, torch.Tensor):
            enabled = bool(self_.is_enabled())  # a disabled scaler returns the loss itself: not scaled
            if rec.active:  # reading the value waits for the GPU: only in traced steps, never timed ones
                value = float(outputs.detach().float().sum()) if outputs.numel() else None
                rec.emit("scale", value=value, enabled=enabled, scaler=number(self_))
            if enabled:
                rec._scaled.add(result)
        return result

    @watching(unscale_)
    def unscale_w(self_, optimizer):
        index = rec.optimizer_index(optimizer)
        rec.emit("unscale_", optimizer=index, enabled=bool(self_.is_enabled()), scaler=number(self_))
        return unscale_(self_, optimizer)

    @watching(step)
    def step_w(self_, optimizer, *args, **kwargs):
        index = rec.optimizer_index(optimizer)
        rec.emit("scaler_step", optimizer=index, enabled=bool(self_.is_enabled()), scaler=number(self_))
        rec._in_scaler_step = True
        try:
            return step(self_, optimizer, *args, **kwargs)
        finally:
            rec._in_scaler_step = False

    @watching(update)
    def update_w(self_, *args, **kwargs):
        rec.emit("update", scaler=number(self_))
        return update(self_, *args, **kwargs)

    cls.scale, cls.unscale_, cls.step, cls.update = scale_w, unscale_w, step_w, update_w
    return [(cls, "scale"), (cls, "unscale_"), (cls, "step"), (cls, "update")]

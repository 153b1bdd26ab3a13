"""What the trace records of Hugging Face Accelerate, for lessons that list it
in `workload.libraries`: the Accelerator's mixed precision and accumulation
steps, what was passed to `prepare` (or `prepare_model`, `prepare_optimizer`,
`prepare_scheduler`) and whether that was the lesson's model, each `accumulate()` with whether that
micro-batch syncs the gradients, `accelerator.backward` with the loss it got,
and `accelerator.clip_grad_norm_` / `clip_grad_value_` with `sync_gradients`
at that moment. The plain PyTorch calls Accelerate makes underneath (the
backward, the scaler, the optimizer step, the clipping) are recorded by the
Recorder's own wrappers right after these events, at the same learner line.
The rules that read them are in grader/checks/accelerate_calls.py."""

from __future__ import annotations

import torch
from torch import nn

from grader.worker.tracing_distributed import holds_lesson_model
from grader.worker.watching import watching

# The public ways to prepare: all at once, or one object at a time (the same preparation underneath).
PREPARES = ("prepare", "prepare_model", "prepare_optimizer", "prepare_scheduler")


class _Entered:
    """A context manager that reports once it has been entered (accumulate decides sync_gradients there)."""

    def __init__(self, inner, on_enter):
        self.inner, self.on_enter = inner, on_enter

    def __enter__(self):
        value = self.inner.__enter__()
        self.on_enter()
        return value

    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)


def _number(value):
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach().float())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def install(rec) -> list[tuple[object, str]]:
    from accelerate import Accelerator

    init, backward = Accelerator.__init__, Accelerator.backward
    clip_norm, clip_value, accumulate = (
        Accelerator.clip_grad_norm_,
        Accelerator.clip_grad_value_,
        Accelerator.accumulate,
    )

    @watching(init)
    def init_w(self_, *args, **kwargs):
        result = init(self_, *args, **kwargs)
        rec.emit(
            "accelerator_init",
            mixed_precision=str(self_.mixed_precision),
            accumulation_steps=int(self_.gradient_accumulation_steps),
        )
        return result

    inside = []  # prepare() calls prepare_model() and friends: one event for the learner's call

    def preparing(original):
        @watching(original)
        def prepare_w(self_, *args, **kwargs):
            if inside:
                return original(self_, *args, **kwargs)
            inside.append(True)
            try:
                result = original(self_, *args, **kwargs)
            finally:
                inside.pop()
            got = [*args, *kwargs.values()]
            rec.emit(
                "accelerator_prepare",
                models=sum(isinstance(a, nn.Module) for a in got),
                lesson_models=sum(holds_lesson_model(rec, a) for a in got),
                optimizers=sum(isinstance(a, torch.optim.Optimizer) for a in got),
            )
            return result

        return prepare_w

    @watching(backward)
    def backward_w(self_, loss, **kwargs):
        rec.emit("accelerator_backward", value=_number(loss), accumulation_steps=int(self_.gradient_accumulation_steps))
        return backward(self_, loss, **kwargs)

    def clipping(original, fn, key):
        @watching(original)
        def clip(self_, parameters, *args, **kwargs):
            value = args[0] if args else kwargs.get(key)
            rec.emit("accelerator_clip", fn=fn, value=_number(value), sync_gradients=bool(self_.sync_gradients))
            return original(self_, parameters, *args, **kwargs)

        return clip

    @watching(accumulate)
    def accumulate_w(self_, *models):
        return _Entered(
            accumulate(self_, *models), lambda: rec.emit("accumulate", sync_gradients=bool(self_.sync_gradients))
        )

    Accelerator.__init__, Accelerator.backward = init_w, backward_w
    for name in PREPARES:
        setattr(Accelerator, name, preparing(getattr(Accelerator, name)))
    Accelerator.clip_grad_norm_ = clipping(clip_norm, "clip_grad_norm_", "max_norm")
    Accelerator.clip_grad_value_ = clipping(clip_value, "clip_grad_value_", "clip_value")
    Accelerator.accumulate = accumulate_w
    return [
        (Accelerator, name)
        for name in ("__init__", *PREPARES, "backward", "clip_grad_norm_", "clip_grad_value_", "accumulate")
    ]

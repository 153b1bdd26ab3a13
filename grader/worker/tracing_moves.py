"""What the trace records of where the lesson's models go and when saved state comes back: every `.to(device)`,
`.cuda()` or `.cpu()` of a lesson model (or of a module holding one), and every `load_state_dict` of a module, an
optimizer or a GradScaler, in the order the learner's code made them. On CUDA, an optimizer's state loaded
before its model moves stays on the CPU (load_state_dict puts the state beside the parameters as they are
then), and the first step fails; on a CPU both are the same device and nothing fails, so a lesson check grades
that mistake from the order of these events instead."""

from __future__ import annotations

import torch

from grader.worker.watching import watching


def _holds_lesson_model(rec, module) -> bool:
    models = list(getattr(rec, "models", []) or [])
    return any(module is m for m in models) or any(c is m for c in module.modules() for m in models)


def _device_of_to(args, kwargs) -> str | None:
    """The device type a `Module.to(...)` call moves to; None where it only casts (`.to(torch.float16)`)."""
    try:
        device = torch._C._nn._parse_to(*args, **kwargs)[0]
    except (TypeError, RuntimeError, ValueError):
        return None
    return device.type if device is not None else None


def _params_device(params) -> str | None:
    first = next(iter(params), None)
    return first.device.type if isinstance(first, torch.Tensor) else None


def install(rec) -> list[tuple[object, str]]:
    """Wraps Module.to/cuda/cpu and the load_state_dict of modules, optimizers and GradScalers; returns the
    (owner, attribute) pairs it replaced, for the tamper check."""
    module = torch.nn.Module
    replaced = []
    for name in ("to", "cuda", "cpu"):
        original = getattr(module, name)

        def make(original, name):
            @watching(original)
            def move(self_, *args, **kwargs):
                if rec.active and _holds_lesson_model(rec, self_):
                    to = _device_of_to(args, kwargs) if name == "to" else name
                    if to is not None:
                        rec.emit("model_moved", to=to, via=name)
                return original(self_, *args, **kwargs)

            return move

        setattr(module, name, make(original, name))
        replaced.append((module, name))
    owners = ((module, "Module"), (torch.optim.Optimizer, "Optimizer"), (torch.amp.GradScaler, "GradScaler"))
    for cls, owner in owners:
        original = cls.load_state_dict

        def make_load(original, owner):
            @watching(original)
            def load_state_dict(self_, *args, **kwargs):
                if rec.active:
                    rec.emit("state_loaded", owner=owner, **_about(rec, self_, owner))
                return original(self_, *args, **kwargs)

            return load_state_dict

        cls.load_state_dict = make_load(original, owner)
        replaced.append((cls, "load_state_dict"))
    return replaced


def _about(rec, obj, owner: str) -> dict:
    """Where the loaded object's parameters are as its state comes back, and whether it is the lesson's."""
    if owner == "Module":
        return {"lesson": _holds_lesson_model(rec, obj), "params_device": _params_device(obj.parameters())}
    if owner == "Optimizer":
        params = [p for g in obj.param_groups for p in g["params"]]
        lesson = {id(p) for m in getattr(rec, "models", []) or [] for p in m.parameters()}
        return {"lesson": any(id(p) in lesson for p in params), "params_device": _params_device(params)}
    return {}  # a GradScaler: its scale and counters, on no device of a model

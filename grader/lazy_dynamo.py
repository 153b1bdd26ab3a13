"""Keeps torch._dynamo out of a process until something compiles. PyTorch
marks optimizer and autograd internals with torch._disable_dynamo, which
imports torch._dynamo (1.5-2 s of CPU) on their first call just to wrap them,
even when nothing is being compiled. Every grading worker would pay that,
once per submission. Here each such function gets a stand-in that calls it
directly while torch._dynamo has not been imported (then nothing can be
tracing it, so that is exactly what the disabled function does), and the real
dynamo-disabled function from the moment torch._dynamo is imported (a
learner's torch.compile, say). Functions this does not find keep PyTorch's
own behaviour."""

from __future__ import annotations

import inspect
import sys

SCANNED = ("torch.optim", "torch.amp", "torch.nn", "torch.autograd", "torch.utils.checkpoint")


def _lazily_disabled(fn, recursive: bool):
    real = None

    def call(*args, **kwargs):
        nonlocal real
        if real is None and "torch._dynamo" in sys.modules:
            import torch._dynamo

            real = torch._dynamo.disable(fn, recursive, wrapping=False)
        return (real or fn)(*args, **kwargs)

    return call


def _disabled_target(value, compile_file: str):
    """(fn, recursive) when `value` is torch._disable_dynamo's wrapper around fn, else None."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    code = getattr(value, "__code__", None)
    if code is None or code.co_filename != compile_file or code.co_name != "inner" or not value.__closure__:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in value.__closure__)))
    if "fn" not in cells:
        return None
    return cells["fn"], bool(cells.get("recursive", True))


def install() -> int:
    """Gives every torch._disable_dynamo function of the modules loaded so far its stand-in; returns how many."""
    import torch._compile

    compile_file = torch._compile.__file__
    done = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(SCANNED) or "torch._dynamo" in sys.modules:
            continue
        owners = [module] + [v for v in vars(module).values() if inspect.isclass(v)]
        for owner in owners:
            for value in list(vars(owner).values()):
                target = _disabled_target(value, compile_file)
                if target is not None and not hasattr(target[0], "__dynamo_disable"):
                    setattr(target[0], "__dynamo_disable", _lazily_disabled(*target))
                    done += 1
    return done

"""Which of an op's own reads of a tensor's value a GPU would make too.

An op can read a value on the host without any `.item()` of the learner's: `F.one_hot(t)` reads the largest
class to size its output, on every device. But a CPU kernel also reads values only to check its arguments
(`F.one_hot(t, num_classes=8)` checks on a CPU that every class is in [0, 8)), where a GPU kernel checks on
the device with asserts and never waits: the census of a CPU run sees both as `aten::_local_scalar_dense`.

The rule that tells them apart: a read the op needs on every device is one it cannot do without when its
tensors have no values at all. `checks_arguments_only` replays the learner's call on meta tensors (shapes and
dtypes, no data: ATen's code takes its non-CPU path there, as torch.compile's tracing does): if the replay runs
through, the op needs no value and the CPU's read was a check of the arguments; if it stops (a meta tensor has
no value to read), the read is the op's on every device, a sync on a GPU. Where the replay cannot say (no meta
kernel, a tensor subclass), the read counts, as it did before. The rule trusts a meta kernel to need what the
GPU kernel needs: one that sizes its output without a value where the GPU kernel still reads one would pass for
a check (none among the ops a step commonly runs in torch 2.13; bincount, whose CPU kernel reads its values
unseen by the dispatcher, is counted by name in grader/worker/census.py).

`OpCalls` is the torch-function mode that knows which call of the learner's is running when a read happens:
the outermost torch call (PyTorch's own calls inside it reach no mode)."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree
from torch.utils._python_dispatch import _disable_current_modes


class OpCalls(TorchFunctionMode):
    """The torch call of the step that is running now, as (function, args, kwargs); None between calls."""

    def __init__(self):
        super().__init__()
        self.current: tuple | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.compiler.is_compiling():  # nothing to read while dynamo traces: no frame of the grader's in a graph
            return func(*args, **kwargs)
        # the wrappers the grader put around a torch function ran once already, before the call reached this mode
        while (inner := getattr(func, "__grader_original__", None)) is not None:
            func = inner
        outer, self.current = self.current, (func, args, kwargs)
        try:
            return func(*args, **kwargs)
        finally:
            self.current = outer


class _Unknown(Exception):
    pass


def _meta(t: torch.Tensor) -> torch.Tensor:
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout != torch.strided or t.is_quantized:
        raise _Unknown
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


def checks_arguments_only(call: tuple | None) -> bool:
    """Whether the call runs through on meta tensors: its value reads on a CPU were checks of its arguments.
    False where it needs a value (a meta tensor has none to read), and wherever the replay cannot tell."""
    if call is None:
        return False
    func, args, kwargs = call
    owner = getattr(func, "__objclass__", None)  # a Tensor method's class
    module = getattr(func, "__module__", None) or getattr(owner, "__module__", None) or ""
    if not module.startswith("torch"):  # a subclass's method, say: replaying it would run the learner's code
        return False
    try:
        meta_args, meta_kwargs = _pytree.tree_map_only(torch.Tensor, _meta, (args, kwargs))
        with _disable_current_modes(), torch._C.DisableTorchFunction(), torch.no_grad():
            func(*meta_args, **meta_kwargs)
    except Exception:  # noqa: BLE001  a value read on meta, no meta kernel, an argument meta cannot stand for
        return False
    return True

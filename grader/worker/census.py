"""What makes a mixed-precision step slow, counted op by op: the host waiting for
the device (a sync), data crossing between host and device (a copy), and
matmuls that ran in float32 where autocast would have run them in 16-bit.

`Census` runs inside a worker. A dispatch mode sees every ATen op a step runs
(after autocast chose its dtype); a few wrappers see the host reads that never
reach the dispatcher (printing a tensor, `tolist()`, `numpy()`) and explicit
`synchronize()` calls. Each event carries the line of the code that caused it,
like the recorder's (grader/worker/tracing.py). In the learner's process what it
reports is evidence, not truth: the grading process corroborates it where the
numbers can (grader/checks/profiling.py) and says what it cannot.

The same census runs, in a process of its own that never sees learner code, on
the step a lesson hands out (its starter): that is the grader's own profile of
the given step, with the real `torch.profiler` table of one step beside it
(grader/worker/profiler_table.py).
The summaries below are plain functions over the reported events, used by the
grading process."""

from __future__ import annotations

import os
import sys
from collections import Counter

import torch
from torch.overrides import _get_current_function_mode_stack
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

from grader.worker import op_reads
from grader.worker.precision import ran_in
from grader.worker.watching import watching

# What the learner answers with, and what a profile can show: each name is a symptom a profile makes visible.
CATEGORIES = ("host_sync", "float32_matmul", "host_device_copy")

# The ops autocast runs in 16-bit (its lower-precision list), as they reach the dispatcher below autocast.
MATMULS = {
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "addbmm",
    "mv",
    "addmv",
    "addr",
    "convolution",
    "_convolution",
    "cudnn_convolution",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_prelu_kernel",
}

# Ops whose output size depends on the values: on a GPU the host must wait for them.
DATA_DEPENDENT = {
    "nonzero",
    "masked_select",
    "_unique",
    "_unique2",
    "unique_dim",
    "unique_consecutive",
    "argwhere",
    "repeat_interleave",
}

# Ops that read their input's values to size their output on every device (CUDA's bincount reads the largest value,
# minlength or not) where a CPU kernel reads them through its data, unseen by the dispatcher: an op's own value read
READ_BY_KERNEL = {"bincount"}

# How Python reads a tensor's value (an f-string's format calls item()); a value read the dispatcher sees outside
# them is an op's own (F.one_hot without num_classes reads the largest class to size its output), counted where
# the op needs it on every device (grader/worker/op_reads.py), not where only a CPU kernel checks its arguments
VALUE_READS = ("item", "__float__", "__int__", "__bool__", "__index__", "__complex__")

COPIES = {"_to_copy", "copy_", "_copy_from", "_copy_from_and_resize"}

LOW = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")

# The grader's own value reads inside a step (the recorder notes the loss it saw): not the learner's syncs.
_GRADER_READS = {"record", "scale_w", "__torch_dispatch__", "total_norm", "_norms"}

# the grader's own recording code: a read it makes (a loss value, a dispatch) is never the learner's
_GRADER_FILES = {
    os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    for name in ("tracing.py", "tracing_scaler.py", "gradients.py", "precision.py")
}

MAX_EVENTS = 2000  # distinct (kind, op, line, ...) per step; a real step has a few dozen


def _dtype(t) -> str:
    return ran_in(t)


class Census:
    """Counts one step's syncs, copies and matmuls, each with the learner's line. `install()` runs before the
    learner's module is imported (so `from torch.cuda import synchronize` gets the wrapper); `start()` and
    `stop()` bracket each profiled step."""

    def __init__(self, recorder, device_type: str):
        self.rec = recorder
        self.path = recorder.path
        self.device_type = device_type
        self.active = False
        self.counts: Counter = Counter()
        self.bytes: Counter = Counter()
        self._quiet = 0  # inside a wrapped host read: the ops it runs are part of that one read
        self._reads = 0  # inside a Python read of a tensor's value (VALUE_READS); a value read outside is an op's
        self._stack: list[str] = []
        self._handles: list = []
        self._names: dict[int, str] = {}
        self.mode: CensusMode | None = None
        self.evaded: list[str] = []  # ways around the dispatch mode that the learner's file called during a step

    # -- where an event comes from ----------------------------------------------------------------
    def where(self) -> tuple[int | None, bool]:
        """(the learner's line, whether the learner caused it): an op with no frame of the learner's file
        below it is the grader's own (measuring memory, say), and so is the recorder noting a loss value."""
        frame = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code.co_filename == self.path:
                return frame.f_lineno, True
            if code.co_filename in _GRADER_FILES and code.co_name in _GRADER_READS:
                return None, False
            frame = frame.f_back
        return None, False

    def _on_device(self, t) -> bool:
        """A value only makes the host wait when it lives on the device that computes (on CPU, everything)."""
        return isinstance(t, torch.Tensor) and (self.device_type == "cpu" or t.device.type != "cpu")

    def note(self, key: tuple, nbytes: int = 0):
        line, learner = self.where()
        if not learner:
            return
        key = (*key, line)
        if key in self.counts or len(self.counts) < MAX_EVENTS:
            self.counts[key] += 1
            self.bytes[key] += nbytes

    # -- what an op is ----------------------------------------------------------------------------
    def observe(self, func, args, kwargs, out):
        name = func._overloadpacket.__name__
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if name == "_local_scalar_dense":  # read by Python (.item(), float(), `if t:`), or by an op that needs it
            if self._on_device(first) and (self._reads or not op_reads.checks_arguments_only(self.mode.calls.current)):
                self.note(("sync", "value" if self._reads else "op_value", f"aten::{name}"))
        elif name in READ_BY_KERNEL:
            if self._on_device(first):
                self.note(("sync", "op_value", f"aten::{name}"))
        elif name in DATA_DEPENDENT or (name == "index" and _bool_index(args)):
            if self._on_device(first):
                self.note(("sync", "data_dependent", f"aten::{name}"))
        elif name in COPIES:
            self._copy(name, args, kwargs, out)
        elif name in ("lift_fresh", "lift_fresh_copy") and isinstance(out, torch.Tensor) and out.device.type != "cpu":
            # torch.tensor(data, device=...): the data are Python's, on the host, copied over inside the call
            self.note(("copy", "h2d", "torch.tensor"), out.numel() * out.element_size())
        elif name in MATMULS and torch._C._current_autograd_node() is None and first is not None:
            self.note(
                (
                    "matmul",
                    f"aten::{name}",
                    _dtype(first),
                    self._stack[-1] if self._stack else "",
                    self._autocast_state(),
                )
            )

    def _copy(self, name, args, kwargs, out):
        if name == "_to_copy":
            src, dst = args[0], out
        else:  # copy_(self, src)
            dst, src = args[0], args[1] if len(args) > 1 else None
        if not (isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)):
            return
        a, b = src.device.type, dst.device.type
        if a == b:
            return
        nbytes = dst.numel() * dst.element_size()
        direction = "h2d" if a == "cpu" else "d2h" if b == "cpu" else "d2d"
        self.note(("copy", direction, f"aten::{name}"), nbytes)
        if direction == "d2h" and not kwargs.get("non_blocking", False):
            self.note(("sync", "to_host", f"aten::{name}"))

    def _autocast_state(self) -> str:
        """The innermost autocast region for this device: on, off (turned off inside one) or none at all."""
        for device, enabled in reversed(self.rec._autocast_stack):
            if device == self.device_type:
                return "on" if enabled else "off"
        return "none"

    # -- a profiled step ----------------------------------------------------------------------------
    def start(self, models, module_names: dict[int, str]) -> CensusMode:
        self.counts, self.bytes, self._stack, self.evaded = Counter(), Counter(), [], []
        self._names = module_names
        for model in models:
            for module in model.modules():
                self._handles.append(module.register_forward_pre_hook(self._push))
                self._handles.append(module.register_forward_hook(self._pop, always_call=True))
        self.mode = CensusMode(self)
        return self.mode

    def _push(self, module, args):
        self._stack.append(self._names.get(id(module), type(module).__name__))

    def _pop(self, module, args, output):
        if self._stack:
            self._stack.pop()

    def stop(self) -> list[dict]:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self.active = False
        return [_event(key, n, self.bytes[key]) for key, n in self.counts.items()]

    # -- host reads the dispatcher never sees -------------------------------------------------------
    def install(self):
        import torch._tensor_str as tensor_str

        census = self

        def host_read(original, op):
            @watching(original)
            def read(self_, *args, **kwargs):
                if census.active and not census._quiet and census._on_device(self_):
                    census.note(("sync", "print" if op == "print" else "host_read", op))
                census._quiet += 1
                try:
                    return original(self_, *args, **kwargs)
                finally:
                    census._quiet -= 1

            return read

        def explicit(original, op):
            @watching(original)
            def synchronize(*args, **kwargs):
                if census.active:
                    census.note(("sync", "explicit", op))
                return original(*args, **kwargs)

            return synchronize

        def guarded(original, label):
            @watching(original)
            def call(*args, **kwargs):
                if census.active and sys._getframe(2).f_code.co_filename == census.path:  # (1) is watching's call
                    census.evaded.append(label)
                return original(*args, **kwargs)

            return call

        def to_host(original):
            """On a CPU `.cpu()` returns the tensor itself and dispatches nothing; on a GPU it is a blocking copy
            to the host (which _copy sees there). Counted on a CPU as the sync it would be."""

            @watching(original)
            def cpu(self_, *args, **kwargs):
                if census.active and not census._quiet and census.device_type == "cpu":
                    census.note(("sync", "to_host", "tensor.cpu"))
                return original(self_, *args, **kwargs)

            return cpu

        def value_read(original):
            @watching(original)
            def read(self_, *args, **kwargs):
                census._reads += 1
                try:
                    return original(self_, *args, **kwargs)
                finally:
                    census._reads -= 1

            return read

        for name in VALUE_READS:
            setattr(torch.Tensor, name, value_read(getattr(torch.Tensor, name)))
        torch.Tensor.cpu = to_host(torch.Tensor.cpu)
        torch.Tensor.tolist = host_read(torch.Tensor.tolist, "tensor.tolist")
        torch.Tensor.numpy = host_read(torch.Tensor.numpy, "tensor.numpy")
        tensor_str._str = host_read(tensor_str._str, "print")
        for owner, attr, op in _synchronizers():
            setattr(owner, attr, explicit(getattr(owner, attr), op))
        for owner, attr in _mode_switches():
            setattr(owner, attr, guarded(getattr(owner, attr), f"{owner.__name__}.{attr}"))
        self._snapshot = {(owner, attr): getattr(owner, attr) for owner, attr in self._watched()}

    def _watched(self) -> list[tuple[object, str]]:
        import torch._tensor_str as tensor_str

        return [
            (torch.Tensor, "cpu"),
            *[(torch.Tensor, name) for name in VALUE_READS],
            (torch.Tensor, "tolist"),
            (torch.Tensor, "numpy"),
            (tensor_str, "_str"),
            *[(owner, attr) for owner, attr, _ in _synchronizers()],
            *_mode_switches(),
            (Census, "observe"),
            (Census, "note"),
            (Census, "where"),
            (Census, "_copy"),
            (Census, "_on_device"),
            (Census, "_autocast_state"),
            (CensusMode, "__torch_dispatch__"),
            (op_reads.OpCalls, "__torch_function__"),
            (op_reads, "checks_arguments_only"),
        ]

    def tampered(self) -> list[str]:
        """What learner code replaced among the census's functions, or a census mode it took off the stack.
        As with the recorder, code in the same process can always do better; this catches the plain patch."""
        changed = [
            f"{getattr(owner, '__name__', owner)}.{attr}"
            for (owner, attr), value in self._snapshot.items()
            if getattr(owner, attr, None) is not value
        ]
        changed += [f"census.{name}" for name in ("observe", "note", "where") if name in vars(self)]
        if self.mode is not None and self.mode.lost:
            changed.append("the census dispatch mode")
        changed += sorted(set(self.evaded))
        return changed


def _synchronizers() -> list[tuple[object, str, str]]:
    out = [
        (torch.cuda, "synchronize", "torch.cuda.synchronize"),
        (torch.cuda.Stream, "synchronize", "Stream.synchronize"),
        (torch.cuda.Event, "synchronize", "Event.synchronize"),
    ]
    if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "synchronize"):
        out.append((torch.accelerator, "synchronize", "torch.accelerator.synchronize"))
    return out


def _mode_switches() -> list[tuple[object, str]]:
    """What turns dispatch modes off: PyTorch's own code uses them (printing a tensor does), a step must not."""
    import torch.utils._python_dispatch as python_dispatch

    return [
        (python_dispatch, "_disable_current_modes"),
        (python_dispatch, "_pop_mode_temporarily"),
        (python_dispatch, "_pop_mode"),
        (torch._C, "_unset_dispatch_mode"),
        (torch._C, "_DisableTorchDispatch"),
    ]


def _bool_index(args) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices or ())


def _event(key: tuple, n: int, nbytes: int) -> dict:
    ev, line = key[0], key[-1]
    if ev == "sync":
        return {"ev": "sync", "kind": key[1], "op": key[2], "line": line, "n": n}
    if ev == "copy":
        return {"ev": "copy", "dir": key[1], "op": key[2], "line": line, "n": n, "bytes": nbytes}
    return {"ev": "matmul", "op": key[1], "dtype": key[2], "module": key[3], "autocast": key[4], "line": line, "n": n}


class CensusMode(TorchDispatchMode):
    """Sees each op after autocast has cast its inputs, so the dtype is what really ran. Entered last, inside
    the grader's other modes, so the grader's own reads in them never reach it."""

    def __init__(self, census: Census):
        super().__init__()
        self.census = census
        self.calls = op_reads.OpCalls()  # which torch call of the step an op's own value read belongs to
        self.lost = False

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """As PrecisionMode's (grader/worker/precision.py): never a reason for dynamo to run a frame eagerly."""
        return True

    def __enter__(self):
        self.census.active = True
        self.calls.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        self.census.active = False
        if _get_current_function_mode_stack()[-1:] == [self.calls]:
            self.calls.__exit__(*exc)
        else:
            self.lost = True  # popped, or another mode left above it
        if self not in _get_current_dispatch_mode_stack():
            self.lost = True  # the learner's code popped it: leave the stack as it is
            return False
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        census = self.census
        if census.active and not census._quiet:
            census.observe(func, args, kwargs, out)
        return out

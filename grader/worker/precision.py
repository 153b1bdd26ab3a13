"""What ran in 16-bit: a dispatch mode that counts each matmul's and convolution's
FLOPs by the dtype that really ran (after autocast cast its inputs) and by the
module whose forward ran it, and notes each loss op with the autocast state it
ran under. The call trace (grader/worker/tracing.py) guards it against patching."""

from __future__ import annotations

import sys
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry, sdpa_backward_flop_count, sdpa_flop_count

from grader.worker.memory_formats import memory_format

OUTSIDE_MODEL = "(backward or outside the model)"  # where FLOPs that no module's forward ran are counted

LOSS_OPS = {
    "nll_loss_forward",
    "nll_loss2d_forward",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy_loss",
}


def _cpu_sdpa(query, key, value, *args, out_val=None, **kwargs):
    return sdpa_flop_count(query.shape, key.shape, value.shape)


def _cpu_sdpa_backward(grad_out, query, key, value, *args, out_val=None, **kwargs):
    return sdpa_backward_flop_count(grad_out.shape, query.shape, key.shape, value.shape)


# The fused CPU attention kernels are not in torch's FLOP registry; without them a transformer's attention
# matmuls would be invisible to the coverage check.
EXTRA_FLOPS = {}
for _name, _count in (
    ("_scaled_dot_product_flash_attention_for_cpu", _cpu_sdpa),
    ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_sdpa_backward),
):
    if hasattr(torch.ops.aten, _name):
        EXTRA_FLOPS[getattr(torch.ops.aten, _name)] = _count


# Where a custom autograd Function's precision shows: the reductions its forward runs (a mean of squares in
# 16-bit loses the low bits of each square, whatever dtype the Function returns).
REDUCTIONS = {
    "sum",
    "mean",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "norm",
    "linalg_vector_norm",
    "logsumexp",
    "prod",
    "cumsum",
    "_softmax",
    "_log_softmax",
}

_FUNCTION_FILE = torch.autograd.function.__file__


def ran_in(tensor: torch.Tensor) -> str:
    """The dtype a matmul's operand really ran in. torchao's Float8TrainingTensor reports its original dtype but
    holds float8 bytes in `_data`: emulated on a CPU the matmul runs in float32 on float8-rounded values, on a GPU
    in a float8 kernel; either way its precision is float8's."""
    data = getattr(tensor, "_data", None) if type(tensor) not in (torch.Tensor, torch.nn.Parameter) else None
    if isinstance(data, torch.Tensor) and data.dtype.is_floating_point and data.element_size() == 1:
        tensor = data
    return str(tensor.dtype).replace("torch.", "")


_COUNTING: list = [None]  # the PrecisionMode of the step being counted, if any
_HOOKED: weakref.WeakSet = weakref.WeakSet()  # modules that carry the hooks below


def _push(module, args):
    if torch.compiler.is_compiling():  # traced into a compiled forward: nothing, and nothing to guard on
        return
    mode = _COUNTING[0]
    if mode is not None:
        mode._stack.append(mode._names.get(id(module), type(module).__name__))


def _pop(module, args, output):
    if torch.compiler.is_compiling():
        return
    mode = _COUNTING[0]
    if mode is not None and mode._stack:
        mode._stack.pop()


class PrecisionMode(TorchDispatchMode):
    """Counts matmul/conv FLOPs by dtype and by the module that ran them, and
    notes loss ops with the autocast state they ran under, and the memory
    formats convolutions ran with. Ops arrive here after autocast has cast
    their inputs, so the dtype is what really ran."""

    def __init__(self, recorder, module_names: dict[int, str]):  # recorder: grader/worker/tracing.py's Recorder
        super().__init__()
        self.recorder = recorder
        self.flops: dict[str, int] = {}
        self.by_module: dict[str, dict[str, int]] = {}
        self.loss_values: list[float] = []
        self._stack: list[str] = []
        self._names = module_names
        self._owners: dict[int, str] = {}  # id(parameter) -> the name of the module that holds it
        self._function_ops: set[tuple] = set()  # (function, op, dtype, line) already noted this step
        self._layouts: set[tuple] = set()  # (input, weight) memory formats of the convolutions seen this step

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """A learner's torch.compile compiles as it would without the grader (a mode that does not say this
        makes dynamo run every frame eagerly), and the mode sees what the compiled code runs through the
        dispatcher (inductor's calls of matmul kernels; fused pointwise kernels it never sees)."""
        return True

    def attach(self, model: torch.nn.Module):
        """The module hooks stay once registered (adding and removing them around the counted steps would make
        a compiled model recompile on the next step); between counted steps they find no mode and do nothing."""
        _COUNTING[0] = self
        for module in model.modules():
            for param in module.parameters(recurse=False):
                self._owners[id(param)] = self._names.get(id(module), type(module).__name__)
            if module not in _HOOKED:
                module.register_forward_pre_hook(_push)
                # always_call: a forward that stops early still leaves the stack (checkpointing stops its
                # recomputation by raising once it has the tensors it needs)
                module.register_forward_hook(_pop, always_call=True)
                _HOOKED.add(module)

    def detach(self):
        if _COUNTING[0] is self:
            _COUNTING[0] = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        counter = flop_registry.get(packet) or EXTRA_FLOPS.get(packet)
        if counter is not None:
            flops = int(counter(*args, **kwargs, out_val=out))
            tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
            dtype = ran_in(tensor) if tensor is not None else "unknown"
            self.flops[dtype] = self.flops.get(dtype, 0) + flops
            where = self._stack[-1] if self._stack else self._backward_owner()
            mod = self.by_module.setdefault(where, {})
            mod[dtype] = mod.get(dtype, 0) + flops
        name = packet.__name__
        if name == "convolution":
            self._convolution(args)
        if name in REDUCTIONS and self.recorder.active:
            self._function_op(name, args)
        if name in LOSS_OPS:
            value = out[0] if isinstance(out, tuple) else out
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                self.recorder.emit(
                    "loss_op", op=name, autocast=self.recorder.autocast_on(), value=float(value.detach().float())
                )
        return out

    def _backward_owner(self) -> str:
        """A matmul no module's forward is running: in the backward, the module whose parameters are the operands
        of the running autograd node (a Linear's weight gradient is `grad.T @ input`, neither operand its weight).
        An operand is followed only through one-input nodes (a transpose, a cast to 16-bit): an activation's
        history leads to other modules. Operands of more than one module (a compiled graph's backward, an
        Embedding feeding a Linear) name none: outside the model, rather than a layer that may not be the one."""
        node = torch._C._current_autograd_node()
        owners = set()
        for child, _index in getattr(node, "next_functions", None) or ():
            for _ in range(4):
                if child is None:
                    break
                owner = self._owners.get(id(getattr(child, "variable", None)))
                if owner is not None:
                    owners.add(owner)
                    break
                inputs = [c for c, _ in getattr(child, "next_functions", None) or () if c is not None]
                child = inputs[0] if len(inputs) == 1 else None
        return owners.pop() if len(owners) == 1 else OUTSIDE_MODEL

    def _function_op(self, name: str, args):
        """A reduction run inside the forward of a custom autograd Function called from the learner's file: the
        Function, the op, the dtype it ran in and the learner's line (once each a step). What the Function
        returns does not show its precision: a float32 mean of squares cast back to 16-bit at the end is right."""
        tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
        frame, line = sys._getframe(2), None
        while frame is not None:
            code = frame.f_code
            if code.co_filename == self.recorder.path:
                line = frame.f_lineno if line is None else line
            elif code.co_filename == _FUNCTION_FILE and code.co_name == "apply" and "cls" in frame.f_locals:
                if line is None:
                    return
                function = getattr(frame.f_locals["cls"], "__name__", "?")
                key = (function, name, ran_in(tensor) if tensor is not None else "unknown", line)
                if key not in self._function_ops and len(self._function_ops) < 64:
                    self._function_ops.add(key)
                    self.recorder.emit("function_op", function=key[0], op=key[1], dtype=key[2])
                return
            frame = frame.f_back

    def _convolution(self, args):
        """Each layout a convolution really ran with, once a step, at the learner's line that led to it: where the
        layout matters, only the tensors the kernel gets tell it (a model's input can be converted back inside,
        a block called alone bypasses the model's forward)."""
        layout = (memory_format(args[0]), memory_format(args[1]) if len(args) > 1 else None)
        if layout not in self._layouts and len(self._layouts) < 8:
            self._layouts.add(layout)
            self.recorder.emit("convolution", input_format=layout[0], weight_format=layout[1])

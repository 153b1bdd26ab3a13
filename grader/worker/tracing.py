"""Records the AMP-relevant calls a training step really makes, inside the
submission's process. Installed before the learner's module is imported, so
`from torch.nn.utils import clip_grad_norm_` and friends get the wrapped
functions. What it records is evidence for the parent, which decides.

Each event carries the learner's line number (the innermost frame in the
submission file), so diagnostics can point at the line to change."""

from __future__ import annotations

import math
import sys
import weakref

import torch

from grader.worker import gradients, tracing_forward, tracing_scaler
from grader.worker.precision import PrecisionMode
from grader.worker.watching import watching


class Recorder:
    def __init__(self, submission_path: str, device_type: str, libraries: tuple[str, ...] = ()):
        self.path = submission_path
        self.device_type = device_type
        self.libraries = tuple(libraries)  # besides torch, what to trace: "accelerate", "fsdp"
        self.models: list[torch.nn.Module] = []
        self.events: list[dict] = []
        self.active = False
        self._scaled = tracing_scaler.TensorIds()  # what a GradScaler returned: scaled losses
        self._scaled_nodes = {}  # id -> the autograd node of a scaled loss, until the next backward
        self._depth = 0  # nesting of wrapped calls, so inner library calls are not double counted
        self._in_scaler_step = False
        self._in_backward = False
        self._accumulated: float | None = None  # the gradients' norm after the last backward
        self._autocast_stack: list[tuple[str, bool]] = []
        self._forwards = 0  # nesting of the models' forwards: an inner one (the model inside its wrapper) is not one
        self._optimizers: dict[int, int] = {}
        self._known_optimizers: list = []  # weak references: the grader's and any the step used
        self._optimizer_names: dict[int, str] = {}  # the entrypoint's name of each of the grader's optimizers

    # -- helpers -------------------------------------------------------------
    def line(self) -> int | None:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.path:
                return frame.f_lineno
            frame = frame.f_back
        return None

    def autocast_on(self) -> bool:
        # is_autocast_enabled() reads False below the autocast dispatch key (in a
        # dispatch mode), so the recorder also keeps its own stack of regions.
        return torch.is_autocast_enabled(self.device_type) or any(
            enabled and device == self.device_type for device, enabled in self._autocast_stack
        )

    def emit(self, kind: str, **fields):
        if self.active:
            self.events.append({"ev": kind, "line": self.line(), **fields})

    # -- installation ----------------------------------------------------------
    def install(self):
        self._wrap_autocast()
        self._wrap_backward()
        self._wrap_zero_grad()
        self._wrap_clipping()
        self._wrap_model_casts()
        self._wrap_functions()
        self._wrap_compile()
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        register_optimizer_step_pre_hook(self._on_optimizer_step)
        from grader.worker import tracing_distributed, tracing_moves, tracing_schedulers

        replaced = tracing_scaler.install(self) + tracing_distributed.install(self) + tracing_schedulers.install(self)
        replaced += tracing_moves.install(self)  # .to(device) and load_state_dict, in order
        if "accelerate" in self.libraries:
            from grader.worker import tracing_accelerate

            replaced += tracing_accelerate.install(self)
        if "torchao" in self.libraries:
            from grader.worker import tracing_torchao

            replaced += tracing_torchao.install(self)
        if "fsdp" in self.libraries:
            from grader.worker import tracing_fsdp

            replaced += tracing_fsdp.install(self)
        self._snapshot = {(owner, attr): getattr(owner, attr) for owner, attr in self._watched() + replaced}

    def _watched(self) -> list[tuple[object, str]]:
        module = torch.nn.Module
        return [
            (torch.amp.autocast_mode.autocast, "__enter__"),
            (torch.amp.autocast_mode.autocast, "__exit__"),
            (torch.Tensor, "backward"),
            (torch.autograd, "backward"),
            (torch.autograd, "grad"),
            (torch.optim.Optimizer, "zero_grad"),
            (module, "zero_grad"),
            (module, "half"),
            (module, "bfloat16"),
            (module, "to"),
            (Recorder, "emit"),
            (Recorder, "line"),
            (Recorder, "autocast_on"),
            (Recorder, "tampered"),
            (PrecisionMode, "__torch_dispatch__"),
        ]

    def tampered(self) -> list[str]:
        """What learner code replaced among the functions that record evidence. Code in the same process can
        always defeat this; it catches the plain monkeypatch, and the parent checks the numbers regardless."""
        changed = [
            f"{getattr(owner, '__name__', owner)}.{attr}"
            for (owner, attr), value in self._snapshot.items()
            if getattr(owner, attr, None) is not value
        ]
        changed += [f"recorder.{name}" for name in ("emit", "line", "autocast_on") if name in vars(self)]
        return changed

    def watch_model(self, model: torch.nn.Module):
        self.models.append(model)
        tracing_forward.watch(self, model)

    def watch_optimizer(self, optimizer, name: str | None = None):
        """An optimizer whose parameters a clip may touch, so the clip event can say whose gradients it clipped
        even before the step used that optimizer."""
        self._known(optimizer)
        if name:
            self._optimizer_names[id(_inner(optimizer))] = name

    def _known(self, optimizer):
        if not any(ref() is optimizer for ref in self._known_optimizers):
            self._known_optimizers.append(weakref.ref(optimizer))

    def owners(self, params) -> tuple[list[int], list[str], int]:
        """Which optimizers own the parameters (with a gradient) a clip got: their indices, their names where
        the grader knows them, and how many of the parameters no known optimizer owns."""
        owner_of = {
            id(p): _inner(opt)
            for opt in (ref() for ref in self._known_optimizers)
            if opt is not None
            for group in opt.param_groups
            for p in group["params"]
        }
        found, unowned = {}, 0
        for p in params:
            if isinstance(p, torch.Tensor) and p.grad is not None:
                opt = owner_of.get(id(p))
                if opt is None:
                    unowned += 1
                else:
                    found[id(opt)] = opt
        indices = sorted(self.optimizer_index(opt) for opt in found.values())
        by_index = {self.optimizer_index(opt): self._optimizer_names.get(key) for key, opt in found.items()}
        return indices, [by_index[i] or f"optimizer {i}" for i in indices], unowned

    def _wrap_autocast(self):
        cls = torch.amp.autocast_mode.autocast
        enter, exit_ = cls.__enter__, cls.__exit__
        rec = self

        @watching(enter)
        def __enter__(self_):
            result = enter(self_)
            rec._autocast_stack.append((self_.device, bool(self_._enabled)))
            rec.emit(
                "autocast_enter",
                device_type=self_.device,
                dtype=str(self_.fast_dtype).replace("torch.", ""),
                enabled=bool(self_._enabled),
                deprecated=type(self_).__module__.startswith("torch.cuda")
                or type(self_).__module__.startswith("torch.cpu"),
            )
            return result

        @watching(exit_)
        def __exit__(self_, *exc):
            rec.emit("autocast_exit", device_type=self_.device)
            if rec._autocast_stack:
                rec._autocast_stack.pop()
            return exit_(self_, *exc)

        cls.__enter__, cls.__exit__ = __enter__, __exit__

    def _wrap_backward(self):
        rec = self
        tensor_backward = torch.Tensor.backward
        autograd_backward = torch.autograd.backward

        def record(tensors):
            given = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
            first = given[0] if given else None
            if isinstance(first, torch.Tensor) and rec.active:  # reading the value waits for the GPU: only traced
                value = float(first.detach().float().sum()) if first.numel() else None
                scaled = all(tracing_scaler.scaled(rec, t) for t in given)  # one unscaled loss underflows alike
                rec.emit("backward", scaled=scaled, autocast=rec.autocast_on(), value=value)
            rec._scaled_nodes.clear()  # a backward used them: holding them longer would hold their graphs

        @watching(tensor_backward)
        def backward(self_, *args, **kwargs):
            if rec._in_backward:
                return tensor_backward(self_, *args, **kwargs)
            record(self_)
            rec._in_backward, after = True, tracing_scaler.into_unscaled(rec)
            try:
                return tensor_backward(self_, *args, **kwargs)
            finally:
                rec._in_backward = False
                rec.accumulated(after)

        @watching(autograd_backward)
        def autograd_bw(tensors, *args, **kwargs):
            if rec._in_backward:
                return autograd_backward(tensors, *args, **kwargs)
            record(tensors)
            rec._in_backward, after = True, tracing_scaler.into_unscaled(rec)
            try:
                return autograd_backward(tensors, *args, **kwargs)
            finally:
                rec._in_backward = False
                rec.accumulated(after)

        torch.Tensor.backward = backward
        torch.autograd.backward = autograd_bw
        self._wrap_autograd_grad()

    def _wrap_autograd_grad(self):
        """torch.autograd.grad: the gradient penalty's first pass. Records whether it ran on a scaled loss and
        whether it built a graph (create_graph), which the penalty needs to train through."""
        rec = self
        original = torch.autograd.grad

        @watching(original)
        def grad(outputs, inputs, *args, **kwargs):
            first = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
            if isinstance(first, torch.Tensor) and not rec._in_backward:
                rec.emit(
                    "autograd_grad",
                    scaled=tracing_scaler.scaled(rec, first),
                    autocast=rec.autocast_on(),
                    create_graph=bool(kwargs.get("create_graph", args[2] if len(args) > 2 else False)),
                )
            return original(outputs, inputs, *args, **kwargs)

        torch.autograd.grad = grad

    def optimizer_index(self, optimizer) -> int:
        """Optimizers numbered in the order the step first used them, so a rule can tell 'unscale_ twice for
        one optimizer' from 'unscale_ once for each of two'. A wrapper (Accelerate's) is the optimizer it wraps."""
        optimizer = _inner(optimizer)
        key = id(optimizer)
        if key not in self._optimizers:
            if isinstance(optimizer, torch.optim.Optimizer):
                self._known(optimizer)
            self._optimizers[key] = len(self._optimizers)
        return self._optimizers[key]

    def _on_optimizer_step(self, optimizer, args, kwargs):
        reached = gradients.reached(self.models, self._accumulated) if self.active else None
        index = self.optimizer_index(optimizer)
        self.emit(
            "optimizer_step",
            via_scaler=self._in_scaler_step,
            optimizer=index,
            reached=reached,
            gradients=_graded(optimizer),
        )

    def accumulated(self, after=None):
        """The norm of the gradients a backward left (traced steps only: reading it waits for the GPU), which
        a clip or a step compares with what reaches it (grader/worker/gradients.py); `after`, what the backward
        added to gradients already unscaled (grader/worker/tracing_scaler.py)."""
        self._accumulated = gradients.total_norm(self.models) if self.active else None
        if self._accumulated is not None and not math.isfinite(self._accumulated):
            if not any(e["ev"] == "gradients_nonfinite" for e in self.events):  # where the inf/NaN first appeared
                self.emit("gradients_nonfinite", value=str(self._accumulated))
        if after is not None:
            after()

    def _wrap_zero_grad(self):
        rec = self
        for cls in (torch.optim.Optimizer, torch.nn.Module):
            original = cls.zero_grad

            def make(original, owner):
                @watching(original)
                def zero_grad(self_, set_to_none: bool = True):
                    rec.emit("zero_grad", owner=owner, set_to_none=bool(set_to_none))
                    return original(self_, set_to_none)

                return zero_grad

            cls.zero_grad = make(original, cls.__name__)

    def _wrap_model_casts(self):
        """Notes where a module is cast to 16-bit (master weights must stay float32)."""
        rec = self
        low = (torch.float16, torch.bfloat16)
        for name in ("half", "bfloat16", "to"):
            original = getattr(torch.nn.Module, name)

            def make(original, name):
                @watching(original)
                def cast(self_, *args, **kwargs):
                    values = list(args) + list(kwargs.values())
                    if name != "to" or any(v in low for v in values if isinstance(v, torch.dtype)):
                        rec.emit("cast_model", to=name)
                    return original(self_, *args, **kwargs)

                return cast

            setattr(torch.nn.Module, name, make(original, name))

    def _wrap_compile(self):
        """Where the learner calls torch.compile, and on what (compiling inside every step wraps the model again
        each time)."""
        rec = self
        original = torch.compile

        @watching(original)
        def compile(model=None, *args, **kwargs):
            rec.emit("compile", target=type(model).__name__ if model is not None else None)
            return tracing_forward.compiled(rec, model, original(model, *args, **kwargs))

        torch.compile = compile

    def _wrap_functions(self):
        """Custom torch.autograd.Function calls made from the learner's file: the class name and the dtypes
        that went in and came out, which show whether custom_fwd cast the inputs (to float32, say)."""
        rec = self
        function = torch.autograd.Function
        original = function.apply.__func__

        def dtypes(values):
            values = values if isinstance(values, (list, tuple)) else [values]
            return [str(v.dtype).replace("torch.", "") for v in values if isinstance(v, torch.Tensor)]

        @watching(original)
        def apply(cls, *args, **kwargs):
            out = original(cls, *args, **kwargs)
            if rec.active and sys._getframe(2).f_code.co_filename == rec.path:  # (1) is watching's call
                rec.emit(
                    "function",
                    name=cls.__name__,
                    in_dtypes=dtypes(args),
                    out_dtypes=dtypes(out),
                    autocast=rec.autocast_on(),
                )
            return out

        function.apply = classmethod(apply)

    def _wrap_clipping(self):
        import torch.nn.utils as utils
        import torch.nn.utils.clip_grad as clip_grad

        rec = self
        for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"):
            original = getattr(clip_grad, name, None)
            if original is None:
                continue

            def make(original, name):
                @watching(original)
                def clip(*args, **kwargs):
                    key = "clip_value" if name == "clip_grad_value_" else "max_norm"
                    value = args[1] if len(args) > 1 else kwargs.get(key)
                    number = isinstance(value, (int, float)) and not isinstance(value, bool)
                    if rec.active:  # whose parameters: only in traced steps, never timed ones
                        args, kwargs, params = _parameters_listed(args, kwargs)
                        optimizers, names, unowned = rec.owners(params)
                        rec.emit(
                            "clip",
                            fn=name,
                            value=float(value) if number else None,
                            optimizers=optimizers,
                            optimizer_names=names,
                            unowned=unowned,
                            reached=gradients.reached(rec.models, rec._accumulated),
                        )
                    return original(*args, **kwargs)

                return clip

            wrapped = make(original, name)
            setattr(clip_grad, name, wrapped)
            if hasattr(utils, name):
                setattr(utils, name, wrapped)


def _graded(optimizer) -> int:
    """How many of the optimizer's parameters hold a gradient: none after a backward that ran through other
    tensors (a copy of the model)."""
    return sum(p.grad is not None for group in getattr(optimizer, "param_groups", []) for p in group["params"])


def _inner(optimizer):
    """The optimizer inside wrappers that keep it as `.optimizer` (Accelerate's AcceleratedOptimizer): the
    wrapper and the wrapped share their parameters, and unscaling either unscales the same gradients."""
    seen = 0
    while isinstance(getattr(optimizer, "optimizer", None), torch.optim.Optimizer) and seen < 8:
        optimizer, seen = optimizer.optimizer, seen + 1
    return optimizer


def _parameters_listed(args, kwargs):
    """A clip's `parameters` as a list (a generator can be read once: the clip gets the list instead)."""
    params = args[0] if args else kwargs.get("parameters")
    listed = [params] if isinstance(params, torch.Tensor) else list(params) if params is not None else []
    if args:
        args = (listed, *args[1:])
    elif "parameters" in kwargs:
        kwargs = {**kwargs, "parameters": listed}
    return args, kwargs, listed

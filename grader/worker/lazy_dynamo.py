"""Keeps torch._dynamo out of a process until something compiles. PyTorch
imports torch._dynamo (1.5-2 s of CPU) from optimizer and autograd internals
even when nothing is being compiled: functions marked torch._disable_dynamo
import it on their first call just to wrap themselves, and every
optimizer.step() imports it to call torch._dynamo.graph_break(), which does
nothing outside compilation. Every grading worker would pay that once per
submission, on the learner's critical path.

So, while torch._dynamo has not been imported:
- each torch._disable_dynamo function gets a stand-in that calls it directly
  (nothing can be tracing it, so that is exactly what the disabled function
  does), and the real dynamo-disabled function once torch._dynamo is loaded;
- sys.modules holds a stand-in for torch._dynamo whose graph_break does nothing
  (as the real one does when nothing compiles) and which loads the real module,
  and hands over to it, the moment anything else is asked of it: a learner's
  torch.compile, `import torch._dynamo.config`, any attribute.
Functions this does not find keep PyTorch's own behaviour."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import types

# torch.utils holds the dispatch-mode machinery (a TorchDispatchMode subclass's __torch_dispatch__ is marked
# torch._disable_dynamo by PyTorch itself); grader holds the trace's and the census's own modes.
SCANNED = ("torch.optim", "torch.amp", "torch.nn", "torch.autograd", "torch.utils", "grader")


def _graph_break(msg: str = "") -> None:
    """torch._dynamo.graph_break outside compilation: nothing."""


class _DynamoUntilUsed(types.ModuleType):
    """torch._dynamo before anything needs it. Only graph_break is its own; every other name (including the
    __path__ that importing a submodule reads) loads the real module and is taken from it."""

    def __init__(self, file: str):
        super().__init__("torch._dynamo")
        self.graph_break = _graph_break
        # Where the real module lives, without loading it: inspect.getmodule() (which warnings and logging call
        # while other modules are still being imported) reads every module's __file__, and loading the real
        # torch._dynamo in the middle of such an import fails on a circular import (import accelerate did).
        self.__file__ = file

    def __getattr__(self, name):
        return getattr(_load_real(), name)

    def disable(self, fn=None, recursive=True, **kwargs):
        """torch._disable_dynamo's first call of a function install() did not find (a closure PyTorch registers
        as a meta kernel, say, that a replay on meta tensors reaches: grader/worker/op_reads.py) asks for
        `disable(fn, recursive, wrapping=False)`: it gets a stand-in too, and the real module stays out. Any
        other use of disable is the learner's, and gets the real one."""
        if fn is None or kwargs != {"wrapping": False}:
            return _load_real().disable(fn, recursive, **kwargs)
        stand_in = _lazily_disabled(fn, recursive)
        _PATCHED.append((fn, stand_in))
        return stand_in


class _AlreadyImported:
    """A finder (first on sys.meta_path) for a torch._dynamo submodule that is in sys.modules already. Python
    imports `torch._dynamo.utils` by reading its parent's __path__ and then finding and running the submodule;
    while the parent is the stand-in, reading __path__ loads the real torch._dynamo, which imports utils itself,
    and Python would then run utils a second time: two modules, two `counters` (dynamo counted its compiles in
    one, the grader read the other, so `import torchao` made every compile invisible). This hands back the one
    the real module imported."""

    def __init__(self):
        self._specs: dict = {}

    def find_spec(self, name, path=None, target=None):
        if name.startswith("torch._dynamo.") and name in sys.modules:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        module = sys.modules[spec.name]
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self._specs.pop(module.__name__, module.__spec__)  # its own, not this finder's


_STAND_IN: _DynamoUntilUsed | None = None
_PATCHED: list = []  # (fn, its stand-in): the functions whose __dynamo_disable cache holds a stand-in


def real_loaded() -> bool:
    module = sys.modules.get("torch._dynamo")
    return module is not None and module is not _STAND_IN


def _load_real():
    import torch

    if sys.modules.get("torch._dynamo") is _STAND_IN:
        del sys.modules["torch._dynamo"]
        if getattr(torch, "_dynamo", None) is _STAND_IN:
            delattr(torch, "_dynamo")
    real = importlib.import_module("torch._dynamo")
    torch._dynamo = real
    _hand_back()
    _watch_compiles()
    return real


# What a first torch.compile imports beyond torch._dynamo (its backend, AOT autograd, inductor's caches and C++
# code generation, what dynamo's hand-over to a backend reads), and the registries it fills on its first use:
# about 2.5 s of CPU on a 2-core machine, measured with PyTorch 2.13 (tests/test_pool.py checks the main ones).
COMPILER_MODULES = (
    "torch._dynamo.repro.after_dynamo",
    "torch._dynamo.backends.inductor",
    "torch._dynamo.dce_extra_outputs",
    "torch._functorch.aot_autograd",
    "torch._functorch._aot_autograd.subclass_codegen",
    "torch._inductor.compile_fx",
    "torch._inductor.compiler_bisector",
    "torch._inductor.codecache",
    "torch._inductor.codegen.cpp",
    "torch._inductor.codegen.cpp_wrapper_cpu",
    "torch._inductor.codegen.memory_planning",
    "torch._inductor.choices",
    "torch._inductor.hooks",
    "torch._higher_order_ops.passes.inline_invoke_subgraph",
    "torch._subclasses.schema_check_mode",
    "torch._export.passes._node_metadata_hook",
    "torch.export._trace",
    "torch.distributed.tensor.experimental",
    "torch.fx.experimental.validator",
    "torch.utils.cpp_extension",
    "torch.utils.serialization",
)
# What the first compile works out once per process: the registries it fills, and the hash of PyTorch's own
# source that every cache key holds (0.2-0.35 s: it reads inductor's files). Not the CPU's vector instructions
# (cpu_vec_isa.pick_vec_isa, 0.3 s): its probe is a C++ file that a blank, whose compile folder is still empty,
# would compile with g++ (2.7 s); once the lesson's trusted cache is in, the compiled probe is there to load.
COMPILER_FIRST_CALLS = (
    ("torch._dynamo.backends.registry", "_lazy_import"),  # every backend's module, for the backend's name
    ("torch._inductor.codegen.common", "init_backend_registration"),  # every device's code generator
    ("torch._inductor.codecache", "torch_key"),
)


def load_compiler() -> None:
    """For a worker whose lesson compiles, before it says it is ready: the real torch._dynamo, loaded as a
    learner's first torch.compile loads it (the grader's hooks included), and what compiling then imports, so
    that a blank waiting in a pool has paid for it instead of the learner's first step. What this PyTorch lacks
    or does otherwise is left alone: compiling loads what it needs anyway."""
    _load_real()
    for name in COMPILER_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module of another PyTorch build (no distributed, say): left out
            pass
    for name, function in COMPILER_FIRST_CALLS:
        try:
            getattr(importlib.import_module(name), function)()
        except Exception:  # noqa: BLE001 - another PyTorch's: worked out on first use, as without this
            pass


_ON_LOAD: list = []  # what install() was told to run once the real torch._dynamo is loaded


def _watch_compiles():
    """The grader's look at each graph dynamo compiles (grader/worker/compiling.py, handed to install() so that
    the two modules do not import each other), in place before the first compile, wherever the learner compiles
    (prepare's warm-up call included)."""
    for hook in _ON_LOAD:
        hook()


def _hand_back():
    """From here on PyTorch's own torch._disable_dynamo caches the real disabled function on first call, as it
    would have without the stand-ins: a stand-in left in that cache would be a frame dynamo traces into (and
    recompiles on, once per operator it sees) where PyTorch's disabled function is opaque to it."""
    while _PATCHED:
        fn, stand_in = _PATCHED.pop()
        if getattr(fn, "__dynamo_disable", None) is stand_in:
            delattr(fn, "__dynamo_disable")


def _lazily_disabled(fn, recursive: bool):
    real = None

    def call(*args, **kwargs):
        nonlocal real
        if real is None and real_loaded():
            real = _load_real().disable(fn, recursive, wrapping=False)
        return (real or fn)(*args, **kwargs)

    return call


def _disabled_target(value, compile_file: str):
    """(fn, recursive) when `value` is torch._disable_dynamo's wrapper around fn, else None."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if not isinstance(value, types.FunctionType):
        return None
    code = value.__code__
    if code.co_filename != compile_file or code.co_name != "inner" or not value.__closure__:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in value.__closure__)))
    if "fn" not in cells:
        return None
    return cells["fn"], bool(cells.get("recursive", True))


def install(*on_load) -> int:
    """Puts the stand-ins in place (unless torch._dynamo is loaded already); returns how many functions of the
    modules loaded so far got one."""
    _ON_LOAD.extend(hook for hook in on_load if hook not in _ON_LOAD)
    global _STAND_IN
    import torch
    import torch._compile

    if "torch._dynamo" in sys.modules:
        _watch_compiles()
        return 0
    _STAND_IN = _DynamoUntilUsed(os.path.join(os.path.dirname(torch.__file__), "_dynamo", "__init__.py"))
    sys.meta_path.insert(0, _AlreadyImported())
    sys.modules["torch._dynamo"] = _STAND_IN
    torch._dynamo = _STAND_IN
    compile_file = torch._compile.__file__
    done = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(SCANNED):
            continue
        owners = [module] + [v for v in vars(module).values() if inspect.isclass(v)]
        for owner in owners:
            for value in list(vars(owner).values()):
                target = _disabled_target(value, compile_file)
                if target is not None and not hasattr(target[0], "__dynamo_disable"):
                    stand_in = _lazily_disabled(*target)
                    setattr(target[0], "__dynamo_disable", stand_in)
                    _PATCHED.append((target[0], stand_in))
                    done += 1
    return done

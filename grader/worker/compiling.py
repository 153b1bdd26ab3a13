"""What torch.compile did during a step: dynamo's own counters (frames compiled, graphs, graph breaks), and,
from the compiled graphs themselves, how often a graph that holds the lesson model's parameters ran. Read only
once the real torch._dynamo is loaded (grader/worker/lazy_dynamo.py), so a step that compiles nothing costs
nothing.

Why not dynamo's counters alone: they count what was compiled anywhere in the process, so one throwaway lambda
pushed through torch.compile looks like a compiled model while the model runs eagerly; and in torch 2.13 a
frame compiled with fullgraph=True never reaches counters["frames"] (only the graphs count grows), so a correct
`torch.compile(model, fullgraph=True)` looked like no compilation at all. So each graph dynamo hands to a
backend is looked at here: the tensors it takes are the real ones, and when the lesson model's parameters are
among them the backend's compiled function is wrapped to count its calls. A call is the model's forward running
inside a dynamo graph, whatever backend compiled it."""

from __future__ import annotations

import functools
import os
import shutil

from grader.worker import lazy_dynamo

TRUSTED_CACHE = "compile-cache"  # grader/sandboxes/compile_cache.py's IN_CODE_FOLDER: the lesson's trusted entries

# The lesson model's parameters by id (read again at each step: a learner may replace a Parameter), the calls of
# graphs that take any of them, and the graphs compiled from frames dynamo's frame counter does not see.
_STATE: dict = {"params": frozenset(), "model_runs": 0, "fullgraph_graphs": 0, "installed": False}
# dynamo's own timings of a whole compile: a frame's (tracing, AOTAutograd, inductor and its C++ compiler) and
# a backward's, which AOTAutograd compiles lazily in the first backward. The whole grading's budget counts
# them apart from the steps' compute (grader/judge/budget.py).
COMPILE_TIMINGS = ("_compile.compile_inner", "backward._backward_impl")


def seed_cache(code_folder: str) -> None:
    """Copies the lesson's trusted compile cache (graphs and kernels the grader compiled for the lesson's own
    code, read-only in the code folder) into this process's own compile folder, TORCHINDUCTOR_CACHE_DIR, where
    inductor reads and writes: a graph that matches the reference's then loads its kernels instead of compiling
    them. What this process compiles stays in its own folder. A copy that fails costs a compile, nothing else."""
    into = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    trusted = os.path.join(code_folder, TRUSTED_CACHE)
    if into and os.path.isdir(trusted):
        try:
            shutil.copytree(trusted, into, dirs_exist_ok=True)
        except (OSError, shutil.Error):
            pass


def watch(models) -> None:
    """The lesson's models, whose parameters make a compiled graph the model's own."""
    _STATE["params"] = frozenset(id(p) for m in models for p in m.parameters())


def _counted(compiled_fn):
    @functools.wraps(compiled_fn)
    def run(*args, **kwargs):
        _STATE["model_runs"] += 1
        return compiled_fn(*args, **kwargs)

    return run


def install() -> None:
    """Wraps dynamo's hand-over of each graph to the backend; called when the real torch._dynamo loads."""
    if _STATE["installed"]:
        return
    from torch._dynamo import output_graph

    original = output_graph.OutputGraph.call_user_compiler

    @functools.wraps(original)
    def call_user_compiler(self, gm, example_inputs):
        compiled_fn = original(self, gm, example_inputs)
        if getattr(getattr(self, "root_tx", None), "one_graph", False):
            _STATE["fullgraph_graphs"] += 1
        if any(id(t) in _STATE["params"] for t in example_inputs):
            return _counted(compiled_fn)
        return compiled_fn

    output_graph.OutputGraph.call_user_compiler = call_user_compiler
    _STATE["installed"] = True


def warm() -> None:
    """For a zygote whose forks compile (grader/worker/zygote.py --isolate --compiler): one small compile of the
    grader's own, forward and backward under autocast, so that what inductor sets up on its first compile (its
    passes' patterns, its C++ toolchain's checks) is done once instead of in every fork's first step (0.7 s of
    it); then dynamo forgets it, and every count a step reads starts from nothing again. Its kernels went to the
    zygote's own compile folder, which no fork sees."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.compile(model)(torch.randn(4, 8))
    out.float().sum().backward()
    torch._dynamo.reset()
    from torch._dynamo.utils import compilation_time_metrics, counters

    counters.clear()
    compilation_time_metrics.clear()
    _STATE.update(params=frozenset(), model_runs=0, fullgraph_graphs=0)


def counts() -> dict | None:
    """Dynamo's running totals, or None while nothing has compiled. `frames` counts a fullgraph frame by the
    graph it compiled; `model_runs` is how many times a compiled graph holding the lesson model ran."""
    if not lazy_dynamo.real_loaded():
        return None
    install()
    from torch._dynamo.utils import compilation_time_metrics, counters

    return {
        "frames": int(counters["frames"].get("ok", 0)) + _STATE["fullgraph_graphs"],
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "model_runs": _STATE["model_runs"],
        "compile_ms": int(1000 * sum(sum(compilation_time_metrics.get(k, ())) for k in COMPILE_TIMINGS)),
    }


def grown(before: dict | None) -> dict | None:
    """What the totals grew by during one step, since `before` (None while nothing has compiled); never less
    than nothing (torch._dynamo.reset() in a step clears dynamo's counters and timings)."""
    after = counts()
    if after is None:
        return None
    before = before or dict.fromkeys(after, 0)
    return {k: max(0, after[k] - before.get(k, 0)) for k in after}

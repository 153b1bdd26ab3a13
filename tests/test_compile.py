"""A learner's torch.compile inside the grader does what it does outside it: the grader's instruments (the
torch._dynamo stand-in, the dispatch modes that count FLOPs and host syncs, the trace's wrappers and module
hooks) must not make dynamo fall back to eager, recompile or break the graph. And the trace tells what
compilation did: torch.compile called in every step, recompiles, graph breaks."""

import ast
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest
from conftest import ROOT, TEST_LIMITS

from grader import runner
from grader.checks import call_order
from grader.sandboxes.kinds import make_launcher, unavailable_reason

# The compile lesson: its step timeout and its whole-grading budget (measured on a reference that compiles) allow
# for inductor; another lesson's budget, measured on eager references, may not under the suite's load
LESSON = "compile_autocast"
# The first compiled step runs inductor (g++ for each kernel): seconds, not the suite's usual 10 s per step
COMPILE_LIMITS = replace(TEST_LIMITS, step_timeout_s=180)
REQUIRED = {n for n in os.environ.get("AMP_DOJO_REQUIRE_SANDBOXES", "").split(",") if n}

# Compiles the model once (in the first step) and prints dynamo's totals after every step.
COMPILED_ONCE = """
import torch
import torch.nn.functional as F

_compiled = {}


def prepare(model):
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if id(model) not in _compiled:
        _compiled[id(model)] = torch.compile(model)
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(_compiled[id(model)](inputs), targets)
    loss.backward()
    optimizer.step()
    from torch._dynamo.utils import counters

    print("DYNAMO", {"frames": dict(counters["frames"]), "graphs": counters["stats"]["unique_graphs"],
                     "breaks": sum(counters["graph_break"].values())})
    return loss
"""

OUTSIDE = """
import sys, torch
sys.path.insert(0, {root!r})
from grader.lesson.loader import load_all
from grader.worker import workload
torch.set_num_threads(1)
ex = load_all()["compile_autocast"]
problem = workload.build_problem(ex.workload.for_device("cpu").model_dump())
ns = {{}}
exec(sys.stdin.read(), ns)
for step in range({steps}):
    data = problem.step_data(step)
    ns["train_step"](problem.models["model"], problem.optimizers["optimizer"], data["inputs"], data["targets"],
                     "cpu", torch.bfloat16)
"""


def dynamo_totals(output: str) -> list[dict]:
    return [ast.literal_eval(line.split("DYNAMO", 1)[1].strip()) for line in output.splitlines() if "DYNAMO" in line]


def outside_the_grader(code: str, steps: int) -> list[dict]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS": "0"}
    env["TMPDIR"] = os.environ.get("TMPDIR", "/tmp")
    out = subprocess.run(
        [sys.executable, "-c", OUTSIDE.format(root=str(ROOT), steps=steps)],
        input=code,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    ).stdout
    return dynamo_totals(out)


def launcher_for(name):
    why = unavailable_reason(name)
    if why is not None:
        if name in REQUIRED:
            pytest.fail(f"the {name} sandbox is required here but cannot run: {why}")
        pytest.skip(f"{name} sandbox not available: {why}")
    return make_launcher(name, COMPILE_LIMITS, allow_local=True)


@pytest.fixture(scope="module")
def outside(exercises):
    if shutil.which("g++") is None:
        pytest.skip("no C++ compiler here for inductor (scripts/system-deps installs g++)")
    return outside_the_grader(COMPILED_ONCE, exercises[LESSON].workload.for_device("cpu").steps)


@pytest.mark.parametrize("sandbox", ["bwrap", "docker"])
def test_a_learners_torch_compile_compiles_as_it_does_outside_the_grader(sandbox, outside, exercises):
    ex = exercises[LESSON]
    result = runner.run(ex, COMPILED_ONCE, device="cpu", launcher=launcher_for(sandbox))
    assert result.status == "pass", (result.error, [(c.id, c.status, c.message) for c in result.checks])
    inside = dynamo_totals(result.output)
    assert len(inside) == len(outside) == ex.workload.for_device("cpu").steps
    assert inside == outside, (inside, outside)  # step by step: frames, graphs, graph breaks
    assert inside[-1]["graphs"] == 1 and inside[-1]["breaks"] == 0
    assert not result.notes  # compiled once, no recompile, no graph break: nothing to advise
    compiled = result.check("call_order").measured["compiled"]  # the counts travel with the result
    assert compiled == {"steps_compiling": [0], "frames": 1, "graphs": 1, "graph_breaks": 0}, compiled


def test_torch_compile_in_every_step_is_named_at_its_line(exercises):
    every = COMPILED_ONCE.replace("    if id(model) not in _compiled:\n", "    if True:\n")
    result = runner.run(exercises[LESSON], every, device="cpu", launcher=launcher_for("bwrap"))
    line = next(i for i, text in enumerate(every.splitlines(), 1) if "= torch.compile(model)" in text)
    mistake = result.check("compiled").findings[0]  # the lesson's own check fails it
    assert (result.status, mistake.id, mistake.line) == ("fail", "compile_inside_step", line), result.to_dict()
    # call_order's advice on that line (compile_every_step, which any lesson gives) is not said again beside the
    # lesson's failure on the same line (grader/results.py advice_said_once)
    assert not [n for n in result.notes if n.id == "compile_every_step" and n.line == line], result.to_dict()


def test_recompiles_and_graph_breaks_are_told_from_dynamos_counts():
    first = {"step": 0, "frames": 2, "graphs": 2, "graph_breaks": 1}
    quiet = {"step": 1, "frames": 0, "graphs": 0, "graph_breaks": 0}
    again = {"step": 5, "frames": 1, "graphs": 1, "graph_breaks": 0}
    found = {f.id: f for f in call_order.compilation([], [first, quiet, again])}
    assert set(found) == {"recompiled", "graph_breaks"}
    assert "step 5" in found["recompiled"].message and all(f.severity == "info" for f in found.values())
    assert call_order.compilation([], [{**first, "graph_breaks": 0}, quiet]) == []


RECOMPILES_LATE = """
import torch
import torch.nn.functional as F

_compiled, _steps = {}, [0]


def prepare(model):
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    if id(model) not in _compiled:
        _compiled[id(model)] = torch.compile(lambda x, k: model(x) * (k / k))
    k = 1.0 if _steps[0] < 5 else 2.0  # a Python number the graph is specialised on changes at step 5
    _steps[0] += 1
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(_compiled[id(model)](inputs, k), targets)
    loss.backward()
    optimizer.step()
    return loss
"""


def test_a_recompile_past_the_traced_steps_is_named_with_its_step(exercises):
    result = runner.run(exercises[LESSON], RECOMPILES_LATE, device="cpu", launcher=launcher_for("bwrap"))
    assert result.error is None and result.status == "fail", result.to_dict()
    mistake = result.check("compiled").findings[0]
    assert mistake.id == "recompiled" and "step 5" in mistake.message
    assert "step 5" in next(n for n in result.notes if n.id == "recompiled").message


def test_once_dynamo_is_loaded_pytorch_caches_its_own_disabled_functions():
    """A stand-in left in torch._disable_dynamo's cache is a frame dynamo traces into: it made dynamo recompile
    once per operator and give up on the learner's model (its recompile limit)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from grader.worker import lazy_dynamo\n"
        "lazy_dynamo.install()\n"
        "import torch\n"
        "patched = list(lazy_dynamo._PATCHED)\n"
        "torch._dynamo.config\n"  # any use of torch._dynamo loads the real one
        "left = [fn for fn, stand_in in patched if getattr(fn, '__dynamo_disable', None) is stand_in]\n"
        "print(len(patched) > 0, lazy_dynamo.real_loaded(), len(left))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True", "0"], out.stderr[-2000:]


COMPILED_FORWARDS = """
import sys, torch
from grader.worker import tracing
rec = tracing.Recorder(__file__, "cpu"); rec.install()
found = {}
for how in ("torch.compile", "module.compile", "eager", "under autocast"):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    rec.models.clear(); rec.watch_model(model)
    if how == "torch.compile": model = torch.compile(model, backend="eager")
    if how == "module.compile": model.compile(backend="eager")
    rec.events, rec.active = [], True
    for _ in range(2):
        if how == "under autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(torch.randn(3, 4))  # line 15
        else:
            out = model(torch.randn(3, 4))  # line 17
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = out.float().sum()
    rec.active = False
    found[how] = [(e["line"], e["autocast"], e["dtype"]) for e in rec.events if e["ev"] == "forward"]
print(found)
"""


def test_a_compiled_forward_is_a_forward_event_at_the_learners_line(tmp_path):
    """A compiled model runs its hooks inside the graph, where they record nothing: the call of what
    torch.compile returned is the forward, once per call, with the autocast state it was called in."""
    (tmp_path / "learner.py").write_text(COMPILED_FORWARDS)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "learner.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    outside = [(17, False, "float32")] * 2
    assert found == {
        "torch.compile": outside,
        "module.compile": outside,
        "eager": outside,
        "under autocast": [(15, True, "bfloat16")] * 2,
    }

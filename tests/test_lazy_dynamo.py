"""torch._dynamo stays out of a grading worker until something compiles
(grader/worker/lazy_dynamo.py), and everything that needs it still gets the real
module: a training step with the usual AMP calls loads nothing more, while
torch.compile, torch._dynamo submodules and checkpointing keep working. Each
case runs in a fresh interpreter, as a worker does."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP = """
import sys
sys.path.insert(0, {root!r})
from grader.worker.serve import preload
preload()
import torch
from grader.worker import lazy_dynamo
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
scaler = torch.amp.GradScaler("cpu")
for opt in (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), torch.optim.AdamW(model.parameters())):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(torch.randn(4, 8)), torch.tensor([0, 1, 0, 1]))
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
"""


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", STEP.format(root=str(ROOT)) + code], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_training_step_does_not_load_dynamo():
    assert run("print(lazy_dynamo.real_loaded(), type(sys.modules['torch._dynamo']).__name__)").split() == [
        "False",
        "_DynamoUntilUsed",
    ]


def test_an_op_replayed_on_meta_tensors_does_not_load_dynamo_and_compiling_after_it_still_does():
    """The census replays an op on meta tensors (grader/worker/op_reads.py); PyTorch's meta kernels for arange
    and eq are torch._disable_dynamo closures that no scan of a module finds."""
    out = run("""
from grader.worker import op_reads
call = (torch.nn.functional.one_hot, (torch.tensor([0, 3]),), {"num_classes": 4})
print(op_reads.checks_arguments_only(call), lazy_dynamo.real_loaded())
compiled = torch.compile(lambda x: x + 1, backend="eager")
print(compiled(torch.ones(2)).tolist(), op_reads.checks_arguments_only(call), lazy_dynamo.real_loaded())
""")
    assert out.split("\n")[:2] == ["True False", "[2.0, 2.0] True True"]


def test_compiling_gets_the_real_dynamo_and_the_optimizer_still_steps():
    out = run("""
compiled = torch.compile(lambda x: x * 2, backend="eager")
print(compiled(torch.ones(2)).tolist())
opt.step()
import torch._dynamo.config as config
print(lazy_dynamo.real_loaded(), type(sys.modules["torch._dynamo"]).__name__, config.recompile_limit > 0)
""")
    assert out.split("\n")[:2] == ["[2.0, 2.0]", "True module True"]


def test_checkpointing_reads_the_real_config_transparently():
    out = run("""
from torch.utils.checkpoint import checkpoint
x = torch.randn(4, 8, requires_grad=True)
checkpoint(model, x, use_reentrant=False).sum().backward()
print(x.grad is not None, lazy_dynamo.real_loaded())
""")
    assert out.split() == ["True", "True"]


def test_looking_modules_up_by_file_does_not_load_dynamo_and_accelerate_imports():
    """inspect.getmodule (warnings call it while a module is still importing) reads every module's __file__;
    loading the real torch._dynamo then, in the middle of torch.distributed's imports, was a circular import."""
    out = run("""
import inspect
inspect.getmodule(inspect.currentframe())
print(lazy_dynamo.real_loaded())
from accelerate import Accelerator
accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)
prepared, _ = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
print(prepared is model)
""")
    assert out.split() == ["False", "True"]


def test_a_traced_step_under_the_graders_own_dispatch_modes_does_not_load_dynamo():
    """PyTorch marks every TorchDispatchMode's __torch_dispatch__ torch._disable_dynamo: the trace's precision
    mode and the census's mode, entered in every traced step, loaded the real module on the learner's first
    step (2 s of a warm sandbox's verdict)."""
    out = run("""
from grader.worker import tracing
from grader.worker.census import Census
recorder = tracing.Recorder("submission.py", "cpu", [])
census = Census(recorder, "cpu")
census.install()
with tracing.PrecisionMode(recorder, {}), census.start([model], {}):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(torch.randn(4, 8)), torch.tensor([0, 1, 0, 1]))
    loss.backward()
    opt.step()
print(lazy_dynamo.real_loaded())
""")
    assert out.split() == ["False"], out


def test_a_dynamo_submodule_imported_first_is_one_module_whose_counters_see_compiles():
    """`import torch._dynamo.utils` while the stand-in is torch._dynamo (torchao does it) loaded the real module,
    which imported utils, and Python then ran utils again: dynamo counted its compiles in one `counters`, the
    grader read the other, and every compile of an FP8 lesson looked like none."""
    out = run(
        "import torch._dynamo.utils as utils\n"
        "import torch._dynamo.convert_frame as convert_frame\n"
        "assert convert_frame.counters is utils.counters\n"
        "assert utils.__spec__.origin.endswith('utils.py')\n"
        "torch.compile(lambda x: x * 2)(torch.ones(2))\n"
        "print(utils.counters['frames']['ok'])\n"
    )
    assert out.strip() == "1"

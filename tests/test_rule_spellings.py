"""A table of equivalent spellings per rule: each right spelling passes the rule, each wrong one fails it.

The events are recorded for real: every snippet runs once, in a subprocess of its own kind (the Recorder
replaces torch's functions process-wide), on small models with the lesson's objects watched as the worker
watches them, and the parent applies the rules to what was recorded. So a spelling that the Recorder does not
see, or sees as something else, fails here as it would in a grading."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.checks import accelerate_calls, call_order

ROOT = Path(__file__).resolve().parent.parent
AMP = {"autocast": True, "scaler": True, "micro_batches": 1, "device_type": "cpu", "amp_dtype": "bfloat16"}

# Each snippet has model_a, model_b, optimizer_a, optimizer_b (the lesson's, watched), scaler (the grader's),
# inputs, nn, F, torch, itertools and DDP. `loss` is what `forward()` returns: both models, under autocast.
PRELUDE = "loss = forward()\n"
CLIPS = {
    "unscale_both_clip_both": (
        "right",
        "scaler.scale(loss).backward()\nscaler.unscale_(optimizer_a)\n"
        "scaler.unscale_(optimizer_b)\nclip(model_a.parameters(), 1.0)\n"
        "clip(model_b.parameters(), 1.0)",
    ),
    "unscale_a_clip_a": (
        "right",
        "scaler.scale(loss).backward()\nscaler.unscale_(optimizer_a)\nclip(model_a.parameters(), 1.0)",
    ),
    "unscale_both_clip_chain": (
        "right",
        "scaler.scale(loss).backward()\nscaler.unscale_(optimizer_b)\n"
        "scaler.unscale_(optimizer_a)\n"
        "clip(itertools.chain(model_a.parameters(), model_b.parameters()), 1.0)",
    ),
    "unscale_a_clip_one_tensor_of_a": (
        "right",
        "scaler.scale(loss).backward()\nscaler.unscale_(optimizer_a)\nclip(model_a.weight, max_norm=1.0)",
    ),
    "unscale_a_clip_b": (
        "clip_of_other_optimizer",
        "scaler.scale(loss).backward()\nscaler.unscale_(optimizer_a)\nclip(model_b.parameters(), 1.0)",
    ),
    "unscale_a_clip_chain": (
        "clip_of_other_optimizer",
        "scaler.scale(loss).backward()\n"
        "scaler.unscale_(optimizer_a)\n"
        "clip(list(model_a.parameters()) + list(model_b.parameters()), 1.0)",
    ),
    "no_unscale_clip_a": ("clip_without_unscale", "scaler.scale(loss).backward()\nclip(model_a.parameters(), 1.0)"),
}
BACKWARDS = {
    "tensor_backward_after_autocast": ("right", "scaler.scale(loss).backward()"),
    "autograd_backward_after_autocast": ("right", "torch.autograd.backward(scaler.scale(loss))"),
    "autograd_backward_of_a_list": ("right", "torch.autograd.backward([scaler.scale(loss)])"),
    "autograd_grad_after_autocast": ("right", "torch.autograd.grad(scaler.scale(loss), list(model_a.parameters()))"),
    "autograd_grad_keywords": (
        "right",
        "torch.autograd.grad(outputs=[scaler.scale(loss)], inputs=list(model_a.parameters()), create_graph=True)",
    ),
    "tensor_backward_inside_autocast": (
        "backward_inside_autocast",
        "with autocast():\n    scaler.scale(forward()).backward()",
    ),
    "autograd_backward_inside_autocast": (
        "backward_inside_autocast",
        "with autocast():\n    torch.autograd.backward(scaler.scale(forward()))",
    ),
    "autograd_grad_inside_autocast": (
        "backward_inside_autocast",
        "with autocast():\n    torch.autograd.grad(scaler.scale(forward()), list(model_a.parameters()))",
    ),
    "tensor_backward_unscaled": ("backward_unscaled", "loss.backward()"),
    "autograd_backward_unscaled": ("backward_unscaled", "torch.autograd.backward(loss)"),
    "autograd_grad_unscaled": ("backward_unscaled", "torch.autograd.grad(loss, list(model_a.parameters()))"),
    # The AMP docs' bfloat16 pattern: a disabled scaler is no scaler, so where the lesson wants the loss scaled
    # its scale() scales nothing (in a lesson that wants no scaling, as fp16_vs_bf16, it is right).
    "disabled_scaler": ("backward_unscaled", "torch.amp.GradScaler('cpu', enabled=False).scale(loss).backward()"),
}
DDPS = {
    "ddp_of_the_model": (
        "right",
        "net = DDP(model_a)\nscaler.scale(F.mse_loss(net(inputs), inputs[:, :2])).backward()",
    ),
    "ddp_of_a_module_holding_the_model": (
        "right",
        "net = DDP(nn.Sequential(model_a))\nscaler.scale(F.mse_loss(net(inputs), inputs[:, :2])).backward()",
    ),
    "ddp_of_another_module": (
        "ddp_wraps_other_module",
        "net = DDP(nn.Linear(4, 2))\n"
        "scaler.scale(F.mse_loss(model_a(inputs), inputs[:, :2]) + net(inputs).sum() * 0).backward()",
    ),
    "ddp_of_the_model_built_but_another_called": (
        "ddp_wraps_other_module",
        "net = DDP(nn.Sequential(model_a, model_b))\n"
        "part = DDP(nn.Linear(4, 2))\nscaler.scale(part(inputs).sum() * 0 + model_a(inputs).sum()).backward()",
    ),
}
PREPARES = {
    "prepare_both": ("right", "accelerator().prepare(model_a, optimizer_a)"),
    "prepare_one_by_one": (
        "right",
        "acc = accelerator()\nacc.prepare_model(model_a)\nacc.prepare_optimizer(optimizer_a)",
    ),
    "prepare_keyword_spelling": (
        "right",
        "acc = accelerator()\nacc.prepare_model(model=model_a)\nacc.prepare_optimizer(optimizer=optimizer_a)",
    ),
    "plugin_for_the_steps": (
        "right",
        "accelerator(gradient_accumulation_plugin=Plugin(num_steps=4)).prepare(model_a, optimizer_a)",
    ),
    "prepare_another_module": ("model_not_prepared", "accelerator().prepare(nn.Linear(4, 2), optimizer_a)"),
    "prepare_optimizer_only": ("model_not_prepared", "accelerator().prepare_optimizer(optimizer_a)"),
    "plugin_with_other_steps": (
        "accumulation_steps_mismatch",
        "accelerator(gradient_accumulation_plugin=Plugin(num_steps=2)).prepare(model_a, optimizer_a)",
    ),
}
TABLES = {
    "clip": (CLIPS, "clip_of_other_optimizer clip_without_unscale"),
    "backward": (BACKWARDS, "backward_inside_autocast backward_unscaled"),
    "ddp": (DDPS, "ddp_wraps_other_module gradients_not_synchronised"),
    "prepare": (PREPARES, "model_not_prepared optimizer_not_prepared accumulation_steps_mismatch"),
}
CASES = [(table, name, verdict) for table, (cases, _) in TABLES.items() for name, (verdict, _) in cases.items()]

HARNESS = r"""
import itertools, json, sys, tempfile
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from grader.worker.tracing import Recorder

path = "<spelling>"
rec = Recorder(path, "cpu", ("accelerate",))
rec.install()
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import GradientAccumulationPlugin as Plugin
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.nn.utils import clip_grad_norm_ as clip

dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
out = {}
for name, code in json.loads(sys.stdin.read()).items():
    torch.manual_seed(0)
    model_a, model_b = nn.Linear(4, 2), nn.Linear(4, 2)
    optimizer_a, optimizer_b = torch.optim.SGD(model_a.parameters(), 0.1), torch.optim.SGD(model_b.parameters(), 0.1)
    rec.models, rec._known_optimizers, rec._optimizers = [], [], {}
    for m in (model_a, model_b):
        rec.watch_model(m)
    rec.watch_optimizer(optimizer_a, "optimizer_a")
    rec.watch_optimizer(optimizer_b, "optimizer_b")
    scaler, inputs = torch.amp.GradScaler("cpu"), torch.randn(8, 4)
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)

    def forward():
        with autocast():
            return F.mse_loss(model_a(inputs) + model_b(inputs), inputs[:, :2])

    def accelerator(**kwargs):
        AcceleratorState._reset_state(True)
        steps = {} if "gradient_accumulation_plugin" in kwargs else {"gradient_accumulation_steps": 4}
        return Accelerator(mixed_precision="bf16", **steps, **kwargs)

    rec.events, rec.active = [], True
    try:
        exec(compile(code, path, "exec"), dict(globals(), **locals()))
        out[name] = rec.events
    except Exception as exc:
        out[name] = [{"ev": "harness_error", "line": None, "error": repr(exc)}]
    rec.active = False
print("EVENTS " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def recorded():
    """Every snippet's events, from one subprocess."""
    code = {
        name: (PRELUDE if table in ("clip", "backward") else "") + source
        for table, (cases, _) in TABLES.items()
        for name, (_, source) in cases.items()
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", HARNESS],
        input=json.dumps(code),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("EVENTS ")), None)
    assert line, done.stderr[-3000:]
    return json.loads(line[len("EVENTS ") :])


def findings(table: str, events: list[dict]) -> set[str]:
    if table == "prepare":
        return {f.id for f in accelerate_calls.prepare_rules({"events": events}, {**AMP, "micro_batches": 4})}
    ctx = {**AMP, "ranks": 2} if table == "ddp" else AMP
    return {f.id for f in call_order.diagnose([{"events": events, "param_dtypes": []}], ctx)}


@pytest.mark.parametrize("table,name,verdict", CASES, ids=[f"{t}-{n}" for t, n, _ in CASES])
def test_a_right_spelling_passes_the_rule_and_a_wrong_one_fails_it(recorded, table, name, verdict):
    found = findings(table, recorded[name]) & set(TABLES[table][1].split())
    assert found == (set() if verdict == "right" else {verdict}), recorded[name]


def test_a_clip_names_the_optimizer_whose_gradients_were_still_scaled(recorded):
    clip = next(e for e in recorded["unscale_a_clip_b"] if e["ev"] == "clip")
    assert clip["optimizer_names"] == ["optimizer_b"] and clip["unowned"] == 0
    found = call_order.diagnose([{"events": recorded["unscale_a_clip_b"], "param_dtypes": []}], AMP)
    assert "optimizer_b" in next(f.message for f in found if f.id == "clip_of_other_optimizer")


def test_a_disabled_scaler_records_its_scale_as_not_enabled(recorded):
    scale = next(e for e in recorded["disabled_scaler"] if e["ev"] == "scale")
    backward = next(e for e in recorded["disabled_scaler"] if e["ev"] == "backward")
    assert scale["enabled"] is False and backward["scaled"] is False


def test_prepare_one_by_one_is_one_prepare_event_per_call(recorded):
    prepared = [e for e in recorded["prepare_one_by_one"] if e["ev"] == "accelerator_prepare"]
    assert [(e["lesson_models"], e["optimizers"]) for e in prepared] == [(1, 0), (0, 1)]


@pytest.mark.parametrize(
    "call,inside",
    [
        ("loss.backward()", True),
        ("torch.autograd.backward(loss)", True),
        ("torch.autograd.grad(loss, params)", True),
        ("torch.autograd.grad(loss, params)", False),
    ],
)
def test_the_source_check_sees_every_backward_entry_point_inside_autocast(call, inside):
    from grader.judge import static

    body = (
        f"    with torch.autocast('cpu'):\n        loss = f()\n        {call}\n"
        if inside
        else f"    with torch.autocast('cpu'):\n        loss = f()\n    {call}\n"
    )
    found = {(f.id, f.line) for f in static.analyse(f"import torch\ndef step(f, params):\n{body}")}
    assert (("backward_inside_autocast", 5) in found) == inside, found

"""A lesson's own evidence: the trace's lr_scheduler_step and memory-format fields, the scaler settings and
forced overflows an author chooses (with the FP32 baseline's scheduler put back on a skipped step), what setup
code records for the lesson's checks, and tensors a lesson keeps for bookkeeping. Each is graded here through a
small lesson written in the test, as an author would write it."""

import textwrap

import pytest
import torch
import yaml

from grader import runner
from grader.lesson.schema import Exercise
from grader.worker.tracing import Recorder

SETUP = """
import torch
from torch import nn

CLASSES, BATCH, SIZE = 4, 32, 8


def build(seed):
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.GELU(), nn.Flatten(), nn.Linear(8 * SIZE * SIZE, CLASSES)
    ).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return {
        "model": model,
        "optimizer": optimizer,
        "scheduler": torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 0.7**epoch),  # closed form
    }


def batch(step, seed):
    centres = torch.randn(CLASSES, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(seed))
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    targets = torch.randint(0, CLASSES, (BATCH,), generator=gen)
    return {"inputs": centres[targets] + torch.randn(BATCH, 3, SIZE, SIZE, generator=gen), "targets": targets}
"""

HEADER = "import torch\nimport torch.nn.functional as F\n\n\n"
PARAMS = "model, optimizer, scheduler, scaler, inputs, targets, device_type, amp_dtype"

# The right step: channels_last inputs, and the scheduler steps only when the scaler did not skip the step
# (a skipped step backs the scale off, and the scale never grows on a step that overflowed).
REFERENCE = HEADER + textwrap.dedent(f"""\
    def train_step({PARAMS}):
        optimizer.zero_grad(set_to_none=True)
        inputs = inputs.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=device_type, dtype=amp_dtype):
            loss = F.cross_entropy(model(inputs), targets)
        scaler.scale(loss).backward()
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() >= scale:
            scheduler.step()
        return loss
""")

# The public FP32 step: no skip logic at all; the grader puts its scheduler back on the forced overflow.
BASELINE = HEADER + textwrap.dedent(f"""\
    def train_step({PARAMS}):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        scheduler.step()
        return loss
""")

STEPS_SCHEDULER_ALWAYS = REFERENCE.replace(
    "    if scaler.get_scale() >= scale:\n        scheduler.step()", "    scheduler.step()"
)
CONTIGUOUS_INPUTS = REFERENCE.replace("    inputs = inputs.contiguous(memory_format=torch.channels_last)\n", "")
assert REFERENCE != STEPS_SCHEDULER_ALWAYS and REFERENCE != CONTIGUOUS_INPUTS

CHECK = """
def check(ev):
    out = []
    for e in ev.calls("forward"):
        if e["input_format"] != "channels_last" or e["weight_format"] != "channels_last":
            out.append(finding("not_channels_last", "the model's input is " + str(e["input_format"]), "convert it",
                               e["line"]))
    for trace in ev.traces:
        for e in trace["events"]:
            if e["ev"] == "lr_scheduler_step" and e["last_epoch"] != e["optimizer_steps"]:
                out.append(finding("scheduler_stepped_on_skip",
                                   "the scheduler stepped on step " + str(trace["step"]), "step it only when the "
                                   "optimizer stepped", e["line"]))
    return out
"""


def lesson(*, at_step=(2, 4), amp=None, checks=(), setup=SETUP, reference=REFERENCE, **workload) -> Exercise:
    """A small channels_last CNN whose LR scheduler must not step on a step the GradScaler skipped."""
    doc = {
        "id": "scheduler_skip",
        "title": "A scheduler that steps with the optimizer",
        "summary": "Step the LR scheduler only when the optimizer stepped.",
        "lesson": "A skipped step is no step of the schedule.",
        "task": "Write train_step.",
        "entrypoint": {"name": "train_step", "params": [p.strip() for p in PARAMS.split(",")]},
        "starter": STEPS_SCHEDULER_ALWAYS,
        "reference": reference,
        "baseline": BASELINE,
        "hints": ["Compare the scale before and after scaler.update()."],
        "quiz": [
            {"question": "Does a skipped step count?", "choices": ["yes", "no"], "answer": 1, "explanation": "No."}
        ],
        "workload": {
            "seed": 1,
            "steps": 7,
            "setup": setup,
            "amp": {"cpu_dtype": "bfloat16", "cuda_dtype": "float16", "scaler": True, **(amp or {})},
            **workload,
        },
        "checks": [
            {"id": "call_order", "scaler": True},
            {
                "id": "parity",
                "tolerances": {
                    "bfloat16": {"loss_rtol": 0.03, "update_rtol": 0.1},
                    "float16": {"loss_rtol": 0.01, "update_rtol": 0.05},
                },
            },
            {"id": "overflow", "at_step": list(at_step) if isinstance(at_step, tuple) else at_step},
            {
                "id": "formats_and_schedule",
                "title": "channels_last, and one schedule step per optimizer step",
                "python": CHECK,
            },
            *checks,
        ],
    }
    return Exercise.model_validate(yaml.safe_load(yaml.safe_dump(doc)))


@pytest.fixture(scope="module")
def graded(launcher):
    cache = {}

    def _graded(exercise: Exercise, source: str):
        key = (exercise.model_dump_json(), source)
        if key not in cache:
            cache[key] = runner.run(exercise, source, device="cpu", launcher=launcher)
        return cache[key]

    return _graded


# -- trace events ----------------------------------------------------------------------------------------


def test_a_scheduler_step_reports_its_optimizers_real_steps_and_the_lr_it_set(tmp_path):
    """Real PyTorch, recorded as a submission's process records it; a step the scaler skipped is no real step."""
    code = tmp_path / "step.py"
    code.write_text(
        "def run(scaler, optimizer, scheduler):\n    scaler.step(optimizer)\n    scaler.update()\n"
        "    scheduler.step()\n"
    )
    namespace = {}
    exec(compile(code.read_text(), str(code), "exec"), namespace)
    rec = Recorder(str(code), "cpu")
    rec.install()
    weight = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
    rec.active = True
    for step in range(4):
        scaler.scale(weight.sum()).backward()
        if step == 1:
            weight.grad[0] = float("inf")
        namespace["run"](scaler, optimizer, scheduler)
        optimizer.zero_grad()
    events = [e for e in rec.events if e["ev"] == "lr_scheduler_step"]
    assert [e["optimizer_steps"] for e in events] == [1, 1, 2, 3]  # step 1 was skipped by the scaler
    assert [e["last_epoch"] for e in events] == [1, 2, 3, 4]
    assert [e["lr"] for e in events] == pytest.approx([0.1, 0.05, 0.05, 0.025])
    assert {e["scheduler"] for e in events} == {0} and {e["optimizer"] for e in events} == {0}
    assert all(e["line"] == 4 for e in events)
    assert rec.tampered() == []


def test_the_right_step_passes_and_its_trace_shows_channels_last_and_one_schedule_step_per_update(graded):
    result = graded(lesson(), REFERENCE)
    assert result.status == "pass", result.to_dict()


def test_contiguous_inputs_are_seen_in_the_forward_events(graded):
    check = graded(lesson(), CONTIGUOUS_INPUTS).check("formats_and_schedule")
    assert check.status == "fail" and {f.id for f in check.findings} == {"not_channels_last"}
    assert "contiguous" in check.findings[0].message


# -- scaler control --------------------------------------------------------------------------------------


def test_a_scheduler_stepped_on_every_forced_overflow_fails_the_trace_and_parity(graded):
    result = graded(lesson(), STEPS_SCHEDULER_ALWAYS)
    steps = [f for f in result.check("formats_and_schedule").findings if f.id == "scheduler_stepped_on_skip"]
    assert [f.message for f in steps] == ["the scheduler stepped on step 2", "the scheduler stepped on step 4"]
    assert result.check("parity").status == "fail"  # its learning rate falls 0.7x further on each forced step
    assert result.check("overflow").status == "pass"  # the optimizer step itself was skipped as it should be


def test_the_fp32_baselines_scheduler_is_put_back_on_each_forced_overflow(graded):
    """The baseline's plain scheduler.step() ran on steps 2 and 4; the grader undid it with the weights, so the
    reference, which does not step its scheduler there, trains exactly like it afterwards."""
    result = graded(lesson(), REFERENCE)
    parity = result.check("parity")
    assert parity.status == "pass" and parity.measured["max_update_rel_diff"] < 0.1
    assert result.check("overflow").measured["steps"] == [2, 4]


def test_a_lesson_sets_every_scaler_factor_and_the_steps_that_overflow(graded):
    exercise = lesson(
        at_step=[1, 4], amp={"init_scale": 256.0, "growth_interval": 1, "growth_factor": 4.0, "backoff_factor": 0.25}
    )
    result = graded(exercise, REFERENCE)
    assert result.status == "pass", result.to_dict()
    # every good step multiplies the scale by 4, each forced overflow (steps 1 and 4) by 0.25
    assert result.plots["scale"] == [1024.0, 256.0, 1024.0, 4096.0, 1024.0, 4096.0, 16384.0]


def test_overflow_steps_must_be_distinct_and_leave_a_step_after_the_last():
    with pytest.raises(ValueError, match="each step at most once"):
        lesson(at_step=[2, 2])
    with pytest.raises(ValueError, match="leaves no step after it"):
        lesson(at_step=[2, 6])
    with pytest.raises(ValueError, match="1 or later"):
        lesson(at_step=[0, 3])

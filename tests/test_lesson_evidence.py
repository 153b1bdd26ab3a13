"""A lesson's own evidence: the trace's lr_scheduler_step and memory-format fields, the scaler settings and
forced overflows an author chooses (with the FP32 baseline's scheduler put back on a skipped step), what setup
code records for the lesson's checks, and tensors a lesson keeps for bookkeeping. Each is graded here through a
small lesson written in the test, as an author would write it."""

import json
import math
import textwrap

import pytest
import torch
import yaml

from grader import runner
from grader.judge import protocol
from grader.lesson.schema import Exercise
from grader.worker import evidence, wire, workload
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
    # the scale chart marks both forced overflows, not only the first
    assert result.plots["scale_overflows"] == [{"step": 1, "scale": 256.0}, {"step": 4, "scale": 1024.0}]


def test_overflow_steps_must_be_distinct_and_leave_a_step_after_the_last():
    with pytest.raises(ValueError, match="each step at most once"):
        lesson(at_step=[2, 2])
    with pytest.raises(ValueError, match="leaves no step after it"):
        lesson(at_step=[2, 6])
    with pytest.raises(ValueError, match="1 or later"):
        lesson(at_step=[0, 3])


# -- lesson evidence: records and bookkeeping tensors ---------------------------------------------------

NOTES = SETUP.replace(
    "def build(seed):",
    '''class Noted(nn.Module):
    """The lesson's model, taking notes for the lesson's checks: a count of channels_last forwards in a buffer
    (bookkeeping, no weight) and each input's format as a record."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.register_buffer("seen", torch.zeros(1))

    def forward(self, x):
        last = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
        self.seen += float(last)
        record("input_format", "channels_last" if last else "contiguous")
        record("batch", [x.shape[0], str(x.dtype)])
        return self.net(x)


def build(seed):''',
).replace('    return {\n        "model": model,', '    return {\n        "model": Noted(model),')

NOTES_CHECK = """
def check(ev):
    formats = [(r["step"], r["value"]) for r in ev.recorded("input_format")]
    if [f for _, f in formats] != ["channels_last"] * 7 or float(ev.params["seen"][0]) != 7:
        baseline = [r["value"] for r in ev.recorded("input_format", "baseline")]
        return finding("inputs_not_channels_last", f"formats {formats}, seen {ev.params['seen'].tolist()}, "
                       f"baseline {baseline}, batch {ev.recorded('batch')[0]['value']}", "convert them")
"""


def noted(**workload) -> Exercise:
    check = {"id": "noted_formats", "title": "every step's input was channels_last", "python": NOTES_CHECK}
    return lesson(setup=NOTES, checks=[check], **workload)


def test_setup_code_records_values_for_the_lessons_checks_every_step(graded):
    result = graded(noted(bookkeeping=["seen"]), CONTIGUOUS_INPUTS)
    check = result.check("noted_formats")
    assert check.status == "fail"
    message = check.findings[0].message
    assert "formats [(0, 'contiguous'), (1, 'contiguous'), (2, 'contiguous')" in message  # forced steps too
    assert "(6, 'contiguous')]" in message and "seen [0.0]" in message
    assert f"baseline {['contiguous'] * 7}" in message and "batch [32, 'torch.float32']" in message


def test_bookkeeping_tensors_are_left_out_of_parity_and_overflow_and_seen_by_lesson_checks(graded):
    result = graded(noted(bookkeeping=["see*"]), REFERENCE)
    assert result.status == "pass", result.to_dict()
    assert "seen" not in result.check("parity").measured["update_rel_diff"]


def test_without_bookkeeping_a_lessons_note_is_judged_as_a_weight(graded):
    """The instructor trial's failure, kept as the reason for workload.bookkeeping: the count differs from the
    FP32 run's (its inputs stay contiguous), so parity judges it. (It moves on the forced overflow too, as the
    forward ran; the overflow check looks at parameters only, so that alone is no applied step.)"""
    result = graded(noted(), REFERENCE)
    assert result.check("overflow").status == "pass"
    assert result.check("parity").status == "fail" and result.check("parity").measured["worst_param"] == "seen"


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        (["seen", "nothing*"], r"workload.bookkeeping\[1\]: 'nothing\*' matches no tensor"),
        (["net.0.*"], r"matches 'net.0.weight', a parameter an optimizer trains"),
    ],
)
def test_a_bookkeeping_entry_must_name_a_tensor_that_no_optimizer_trains(patterns, message):
    spec = noted(bookkeeping=patterns).workload.model_dump()
    with pytest.raises(workload.SetupError, match=message):
        workload.build_problem(spec)


def test_records_are_bounded_per_step_and_ignored_outside_steps():
    evidence.record("outside", 1)
    evidence.begin(3)
    for i in range(evidence.MAX_PER_STEP + 10):
        evidence.record("n", [i, torch.tensor(2.5), "x" * 500, float("inf")])
    with pytest.raises(TypeError, match="not a value a lesson can record"):
        evidence.record("model", torch.nn.Linear(1, 1))
    records = evidence.end()
    assert len(records) == evidence.MAX_PER_STEP
    assert records[0] == {"step": 3, "name": "n", "value": [0, 2.5, "x" * evidence.MAX_STRING, float("inf")]}
    assert evidence.end() == []


def test_an_inf_or_nan_record_reaches_the_lessons_check_as_a_number():
    """Not the string "inf": the worker's channel is Python's JSON, whose Infinity and NaN read back as floats."""
    evidence.begin(0)
    evidence.record("scale", [float("inf"), float("-inf"), float("nan")])
    sent = json.dumps({"ok": True, "records": evidence.end()})
    value = protocol._records(wire.parse_reply(sent)["records"], 0)[0]["value"]
    assert value[:2] == [math.inf, -math.inf] and math.isnan(value[2])


def test_the_judge_refuses_records_beyond_the_bounds_and_files_them_under_the_step_it_asked_for():
    forged = [{"step": 99, "name": "n", "value": ["y" * 10_000, [1, 2], 1e400]}]
    assert protocol._records(forged, 2) == [
        {"step": 2, "name": "n", "value": [protocol.cut("y" * 10_000, 200), float("inf")]}
    ]
    with pytest.raises(TypeError):
        protocol._records([{"name": "n", "value": 1}] * (evidence.MAX_PER_STEP + 1), 0)
    with pytest.raises(TypeError):
        protocol._records([{"name": "x" * 100, "value": 1}], 0)


def test_an_event_missing_a_field_the_lesson_reads_is_the_submissions_malformed_evidence():
    """Learner code can find the Recorder and emit a `float8_convert` whose modules lack `in`: the lesson's
    check read it and the grader blamed the lesson ("this is the lesson's fault", exit 2). A field missing from
    what the worker reported is the submission's protocol error; every check is then not run."""
    from grader.checks import lesson
    from grader.judge.evaluate import judged
    from grader.lesson.loader import load_exercise
    from grader.results import GradingResult

    exercise = load_exercise("fp8_training")
    spec = exercise.check("float8_modules")
    forged = {
        "ev": "float8_convert",
        "line": None,
        "lesson": True,
        "emulate": True,
        "plain": [],
        "converted": [{"name": "fc1", "out": 256, "scaling": "tensorwise"}],
    }
    ev = lesson.LessonEvidence([{"step": 0, "events": [forged]}], [1.0], [1.0], {}, {}, {}, "cpu", "bfloat16")
    with pytest.raises(lesson.MissingEvidence):
        lesson.check(spec, ev)
    result = GradingResult(exercise.id, "cpu", "bfloat16")
    checks = judged(lambda: [lesson.check(spec, ev)], result, exercise)
    assert result.error.kind == "protocol" and {c.status for c in checks} == {"error"}

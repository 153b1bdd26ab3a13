"""Whose error it is, and what a failed run still tells. An exception that arose in the lesson's own code (its
workload.setup, run in the learner's process) is the lesson's: the learner reads "the grader could not grade
this" with their calling line as context, never as the error's line, and the instructor reads the line of
workload.setup. A crash keeps its evidence for the lesson's checks; and those checks can point a finding at the
learner's source."""

import textwrap

import pytest
import yaml

from grader import runner
from grader.authoring import validate
from grader.checks.lesson import LessonEvidence, check
from grader.errors import LessonCodeFailed
from grader.judge.evaluate import submission_error
from grader.lesson.check_specs import LessonCheck
from grader.lesson.loader import read_lesson
from grader.lesson.schema import Exercise
from grader.worker.errors import describe_exception
from grader.worker.workload import SETUP_FILENAME

LESSON_CODE = """\
import torch


def load(blob):
    return torch.load(blob)


def call_back(fn):
    return fn()
"""


def _raised(learner_code: str, path: str):
    lesson_ns = {}
    exec(compile(LESSON_CODE, SETUP_FILENAME, "exec"), lesson_ns)
    learner_ns = {**lesson_ns}
    exec(compile(learner_code, path, "exec"), learner_ns)
    try:
        learner_ns["step"]()
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("the step did not raise")


def test_an_exception_raised_inside_the_lessons_code_is_the_lessons_not_at_the_learners_line(tmp_path):
    path = str(tmp_path / "submission.py")
    exc = _raised("import io\n\n\ndef step():\n    return load(io.BytesIO(b'not a checkpoint'))\n", path)
    payload = describe_exception(exc, path).payload
    assert payload["kind"] == "lesson" and payload["line"] is None and payload["source_line"] is None
    assert payload["lesson_line"] == 5  # torch.load's line in the lesson's code, through torch's own frames
    said = submission_error(payload)
    assert said.kind == "lesson" and said.line is None
    assert said.message.startswith("the grader could not grade this: the lesson's own code failed at line 5 of")
    assert "when line 5 of your code called it. Tell your instructor" in said.message  # context, not blame


def test_a_learner_function_the_lesson_calls_back_is_the_learners_error_at_its_line(tmp_path):
    path = str(tmp_path / "submission.py")
    exc = _raised("def mine():\n    return 1 / 0\n\n\ndef step():\n    return call_back(mine)\n", path)
    payload = describe_exception(exc, path).payload
    assert payload["kind"] == "exception" and payload["line"] == 2


SETUP = """\
import torch
from torch import nn


class Checked(nn.Linear):
    def forward(self, x):
        if torch.is_autocast_enabled("cpu"):  # under the learner's autocast only: the FP32 baseline runs
            raise RuntimeError("the lesson's own forward failed")
        return super().forward(x)


def build(seed):
    model = nn.Sequential(Checked(8, 4))
    return {"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}


def batch(step, seed):
    gen = torch.Generator().manual_seed(seed * 1000 + step)
    return {"inputs": torch.randn(16, 8, generator=gen), "targets": torch.randint(0, 4, (16,), generator=gen)}
"""

STEP = """\
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss
"""


def lesson_doc(setup: str = SETUP, checks: tuple = ()) -> dict:
    return {
        "id": "blamed_lesson",
        "title": "A lesson whose own code fails",
        "summary": "Its forward raises from the second step on.",
        "lesson": "Nothing to learn.",
        "task": "Write train_step.",
        "entrypoint": {
            "name": "train_step",
            "params": ["model", "optimizer", "inputs", "targets", "device_type", "amp_dtype"],
        },
        "starter": "import torch\n\n\ndef train_step(model, optimizer, inputs, targets, device_type, amp_dtype):\n"
        "    pass\n",
        "reference": "import torch\n" + STEP,
        "baseline": "import torch\n"
        + STEP.replace(
            "with torch.autocast(device_type=device_type, dtype=amp_dtype):\n        loss", "if True:\n        loss"
        ),
        "hints": ["none"],
        "quiz": [{"question": "?", "choices": ["a", "b"], "answer": 0, "explanation": "a"}],
        "workload": {"seed": 1, "steps": 3, "setup": setup, "amp": {"cpu_dtype": "bfloat16", "scaler": False}},
        "checks": [{"id": "call_order", "scaler": False}, *checks],
    }


class BlockStrings(yaml.SafeDumper):
    """Code as an author writes it: a multi-line string as a literal block, its lines the file's lines."""


BlockStrings.add_representer(
    str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)
)


@pytest.fixture(scope="module")
def lesson_error_result(launcher):
    exercise = Exercise.model_validate(yaml.safe_load(yaml.safe_dump(lesson_doc())))
    return runner.run(exercise, "import torch\n" + STEP, device="cpu", launcher=launcher)


def test_a_grading_stopped_by_the_lessons_code_tells_the_learner_the_grader_could_not_grade_it(lesson_error_result):
    error = lesson_error_result.error
    assert lesson_error_result.status == "error" and error.kind == "lesson"
    assert error.line is None and error.source_line is None  # the learner's `model(inputs)` is not blamed
    assert error.message.startswith("the grader could not grade this: the lesson's own code failed at line 8 of")
    assert "when line 7 of your code called it" in error.message
    assert "the lesson's own forward failed" in error.message


def test_validate_reports_the_lessons_error_at_its_line_of_workload_setup(lesson_error_result, tmp_path):
    path = tmp_path / "blamed_lesson.yaml"
    path.write_text(yaml.dump(lesson_doc(), Dumper=BlockStrings, sort_keys=False))
    lesson = read_lesson(path)
    said = validate.lesson_fault(lesson, "the reference solution", lesson_error_result)
    setup_at = lesson.locator.block_line(("workload", "setup"), 8)
    assert said.startswith(f"{path}:{setup_at}: workload.setup: the lesson's own code raised while the reference")
    assert textwrap.dedent(SETUP).splitlines()[7].strip() in path.read_text().splitlines()[setup_at - 1]


# -- evidence after a crash ------------------------------------------------------------------------------

RECORDING_SETUP = SETUP.replace(
    '        if torch.is_autocast_enabled("cpu"):  # under the learner\'s autocast only: the FP32 baseline runs\n'
    '            raise RuntimeError("the lesson\'s own forward failed")\n',
    '        record("rows", x.shape[0])\n',
)
RECORDS_CHECK = """
def check(ev):
    rows = ev.recorded("rows")
    if [r["step"] for r in rows] != [0, 1, 2] or len(ev.losses) != 2 or len(ev.baseline_losses) != 3:
        return finding("records_lost", f"records {rows}, losses {ev.losses}", "keep them")
    if "def train_step" not in ev.source:
        return finding("source_lost", "no source", "keep it")
"""
PARAMS_CHECK = """
def check(ev):
    if ev.update("0.weight").abs().sum() == 0:
        return finding("never_trained", "the weights never trained", "train them")
"""
CRASHES_ON_THE_THIRD_STEP = (
    "import torch\n"
    + STEP.replace(
        "    loss.backward()\n",
        "    loss.backward()\n    if len(seen) == 2:\n        raise ValueError('mine')\n    seen.append(1)\n",
    )
    + "\n\nseen = []\n"
)


@pytest.fixture(scope="module")
def crashed(launcher):
    checks = (
        {"id": "records_kept", "title": "the lesson's records", "python": RECORDS_CHECK},
        {"id": "weights_read", "title": "the weights trained", "python": PARAMS_CHECK},
    )
    doc = lesson_doc(RECORDING_SETUP, checks)
    exercise = Exercise.model_validate(yaml.safe_load(yaml.safe_dump(doc)))
    return runner.run(exercise, CRASHES_ON_THE_THIRD_STEP, device="cpu", launcher=launcher)


def test_a_lesson_check_that_passes_on_the_evidence_a_crash_left_stays_passing(crashed):
    """The records of the finished steps and of the failing one (made before it raised), the finished steps'
    losses, the baseline's and the source reach the check: it passes, and is not shown as not run."""
    assert crashed.status == "error" and crashed.error.kind == "exception" and crashed.error.step == 2
    assert crashed.check("records_kept").status == "pass", crashed.check("records_kept")


def test_a_lesson_check_that_needs_the_weights_of_a_crashed_run_is_not_run(crashed):
    assert crashed.check("weights_read").status == "error"


# -- the learner's source, for a lesson check's finding ---------------------------------------------------

LEARNER = """\
import torch


def resume(model, optimizer, scaler, path):
    state = torch.load(path)
    optimizer.load_state_dict(state["optimizer"])
    model.to("cuda")
    scaler.load_state_dict(state["scaler"])  # load_state_dict


class Trainer:
    def resume(self):
        pass
"""


def test_a_lesson_check_points_its_finding_at_the_learners_function_or_call_line():
    ev = LessonEvidence([], [], [], {}, {}, {}, "cpu", "bfloat16", source=LEARNER)
    assert ev.function_line("resume") == 4 and ev.function_line("save") is None
    assert ev.call_lines("load_state_dict") == [6, 8] and ev.call_lines("to") == [7]
    assert ev.lines_matching(r"^\s*model\.to\(") == [7]
    spec = LessonCheck(id="order", title="t", python=ORDER_CHECK)
    found = check(spec, ev)
    assert found.status == "fail" and found.findings[0].line == 6


ORDER_CHECK = """
def check(ev):
    loads, moves = ev.call_lines("load_state_dict"), ev.call_lines("to")
    if loads and moves and loads[0] < moves[0]:
        return finding("loaded_before_move", "the optimizer state is loaded before the model moves", "move first",
                       line=loads[0])
"""


def test_a_submission_that_does_not_parse_has_no_lines_to_point_at():
    ev = LessonEvidence([], [], [], {}, {}, {}, "cpu", "bfloat16", source="def broken(:\n")
    assert ev.function_line("broken") is None and ev.call_lines("broken") == []


def test_a_trusted_run_stopped_by_the_lessons_code_is_the_lessons_error_at_its_setup_line(launcher):
    always = SETUP.replace('        if torch.is_autocast_enabled("cpu"):', "        if True:")
    exercise = Exercise.model_validate(yaml.safe_load(yaml.safe_dump(lesson_doc(always))))
    with pytest.raises(LessonCodeFailed) as raised:
        runner.run(exercise, "import torch\n" + STEP, device="cpu", launcher=launcher)
    assert raised.value.field == ("workload", "setup") and raised.value.line == 8  # not the FP32 baseline's line

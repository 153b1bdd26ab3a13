"""Per-device expectations: an example or a lesson mutant marked `devices: [cuda]` is graded on CUDA only and
skipped elsewhere with its reason shown; and a device-order mistake that only CUDA makes fail (optimizer state
loaded before the model moved) is still visible on a CPU, in the order of the trace's model_moved and
state_loaded events."""

import yaml
from conftest import ROOT
from test_lesson_code_and_evidence import RECORDING_SETUP, lesson_doc

from grader.authoring import lesson_mutants
from grader.authoring.validate import Report, grade_examples
from grader.checks.lesson import LessonEvidence, check
from grader.cli.admin import mutant_line
from grader.lesson.check_specs import LessonCheck
from grader.lesson.loader import read_lesson
from grader.lesson.schema import Exercise
from grader.worker.tracing import Recorder

CUDA_ONLY = {
    "examples": [
        {
            "name": "state_before_move",
            "code": "def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):\n    pass\n",
            "expect": {"status": "error"},
            "devices": ["cuda"],
        }
    ],
    "mutants": {
        "lesson": [
            {
                "name": "no_autocast",
                "why": "the forward runs in float32",
                "replace": {
                    "pattern": "with torch.autocast\\(device_type=device_type, dtype=amp_dtype\\):",
                    "replacement": "if True:",
                },
                "devices": ["cuda"],
            }
        ]
    },
}


def test_a_cuda_only_lesson_mutant_is_skipped_on_a_cpu_with_its_reason_and_not_graded():
    exercise = Exercise.model_validate({**lesson_doc(RECORDING_SETUP), **CUDA_ONLY})
    (result,) = lesson_mutants.run_all(exercise, device="cpu")  # no grading: it would need a launcher
    assert result.skipped == "graded on cuda only (mutants.lesson[0].devices), not on cpu"
    assert "skipped" in mutant_line(result) and "graded on cuda only" in mutant_line(result)


def test_validate_skips_a_cuda_only_example_on_a_cpu_and_says_why(tmp_path):
    path = tmp_path / "blamed_lesson.yaml"
    path.write_text(yaml.safe_dump({**lesson_doc(RECORDING_SETUP), **CUDA_ONLY}, sort_keys=False))
    lesson = read_lesson(path)
    report = Report(path)
    grade_examples(report, lesson, "cpu", launcher=None)  # no grading: it would need a launcher
    assert report.skipped_examples == {"state_before_move": "graded on cuda only (examples[0].devices), not on cpu"}
    assert report.examples == {} and report.problems == []


def test_the_trace_orders_a_models_moves_and_the_state_it_loads(tmp_path):
    """On a CPU the move changes nothing, but its place after optimizer.load_state_dict is in the trace."""
    import torch

    code = tmp_path / "resume.py"
    code.write_text(
        "def resume(model, optimizer, scaler, state):\n"
        "    optimizer.load_state_dict(state['optimizer'])\n"
        "    scaler.load_state_dict(state['scaler'])\n"
        "    model.to('cpu')\n"
        "    model.load_state_dict(state['model'])\n"
        "    model.to(torch.float32)\n"
    )
    namespace = {"torch": torch}
    exec(compile(code.read_text(), str(code), "exec"), namespace)
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.Adam(model.parameters())
    scaler = torch.amp.GradScaler("cpu")
    state = {"optimizer": optimizer.state_dict(), "scaler": scaler.state_dict(), "model": model.state_dict()}
    rec = Recorder(str(code), "cpu")
    rec.install()
    rec.models.append(model)
    rec.active = True
    try:
        namespace["resume"](model, optimizer, scaler, state)
    finally:
        rec.active = False
    seen = [(e["ev"], e["line"], e.get("owner") or e.get("to")) for e in rec.events if e["ev"] != "cast_model"]
    assert seen == [
        ("state_loaded", 2, "Optimizer"),
        ("state_loaded", 3, "GradScaler"),
        ("model_moved", 4, "cpu"),
        ("state_loaded", 5, "Module"),
    ]  # a cast without a device is no move
    optimizer_loaded = rec.events[0]
    assert optimizer_loaded["lesson"] is True and optimizer_loaded["params_device"] == "cpu"
    assert rec.tampered() == []


def test_the_authoring_guides_device_order_check_finds_the_state_loaded_before_the_move(tmp_path):
    """The example of docs/authoring.md, run over the events a resume function leaves (as prepare's)."""
    text = (ROOT / "docs" / "authoring.md").read_text()
    source = text.split("A device-order mistake that only CUDA makes fail", 1)[1].split("```python\n", 1)[1]
    spec = LessonCheck(id="device_order", title="t", python=source.split("```", 1)[0])
    events = [
        {"ev": "state_loaded", "line": 2, "owner": "Optimizer", "lesson": True, "params_device": "cpu"},
        {"ev": "model_moved", "line": 4, "to": "cpu", "via": "to"},
    ]

    def judged(order):
        ev = LessonEvidence([], [], [], {}, {}, {}, "cpu", "bfloat16", prepare_events=order)
        return check(spec, ev)

    wrong = judged(events)
    assert wrong.status == "fail" and wrong.findings[0].line == 2
    assert judged(events[::-1]).status == "pass"

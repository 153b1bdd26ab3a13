"""The overflow the grader forces is a step inside the graded window: every run goes through it (the FP32
baseline by skipping it), so the steps after it are judged as the recovery, and a lesson can move it and make
the scale grow inside the window."""

import math

import pytest
from conftest import SUBMISSIONS

from grader import runner
from grader.judge import drive, evaluate
from grader.lesson.schema import Exercise


def _variant(exercise: Exercise, *, at_step=None, **amp) -> Exercise:
    doc = exercise.model_dump()
    doc["workload"]["amp"].update(amp)
    for check in doc["checks"]:
        if check["id"] == "overflow":
            check["at_step"] = at_step
    return Exercise.model_validate(doc)


def test_the_reference_skips_the_overflowed_step_and_trains_like_the_fp32_run_after_it(grade, exercises):
    result = grade("grad_scaler", exercises["grad_scaler"].reference)
    assert result.status == "pass", result.to_dict()
    over = result.check("overflow")
    step = over.measured["step"]
    assert 0 < step < exercises["grad_scaler"].workload.steps - 1  # inside the window, with steps after it
    scales = result.plots["scale"]
    assert scales[step] == scales[step - 1] / 2 and scales[-1] == scales[step]
    assert result.plots["scale_overflow"] == {"step": step, "scale": scales[step]}


def test_a_lesson_sets_the_overflowed_step_and_the_scalers_growth(exercises, launcher):
    lesson = _variant(exercises["grad_scaler"], at_step=3, init_scale=1024.0, growth_interval=2)
    result = runner.run(lesson, lesson.reference, device="cpu", launcher=launcher)
    assert result.status == "pass", result.to_dict()
    # two good steps double the scale; the overflow on step 3 halves it; two more good steps double it again
    assert result.plots["scale"] == [1024.0, 2048.0, 2048.0, 1024.0, 1024.0, 2048.0, 2048.0, 4096.0]
    assert result.check("overflow").measured["step"] == 3


def test_a_step_that_raises_on_the_overflow_keeps_the_verdicts_of_the_steps_before_it(grade, exercises):
    source = (SUBMISSIONS / "grad_scaler" / "stops_on_a_non_finite_norm.py").read_text()
    result = grade("grad_scaler", source)
    assert result.error is None  # the learner's exception is the overflow check's finding, not the grading's end
    step = result.check("overflow").measured["step"]
    assert result.check("parity").status == "pass" and result.check("coverage").status == "pass"
    assert len(result.plots["loss"]["submission"]) == len(result.plots["loss"]["baseline"]) == step
    finding = result.check("overflow").findings[0]
    assert finding.id == "overflow_step_raised" and "non-finite" in finding.message
    assert f"step {step}" in finding.message


def test_gradients_left_holding_the_inf_are_named_as_no_recovery(grade):
    source = (SUBMISSIONS / "grad_scaler" / "zero_grad_skipped_after_a_skipped_step.py").read_text()
    result = grade("grad_scaler", source)
    over = result.check("overflow")
    assert over.status == "fail" and [f.id for f in over.findings] == ["not_recovered"]
    scales = result.plots["scale"]
    step = over.measured["step"]
    assert all(later < earlier for earlier, later in zip(scales[step:], scales[step + 1 :]))


def test_the_overflowed_steps_losses_are_left_out_of_the_loss_comparison():
    data = drive.RunData(losses=[3.0, 2.0, math.nan, 1.0, math.nan, 0.5], overflows=[{"step": 2}, {"step": 4}])
    assert evaluate.compared_losses(data) == [3.0, 2.0, 1.0, 0.5]


def test_an_overflow_with_no_step_after_it_is_refused_by_the_schema(exercises):
    with pytest.raises(ValueError, match="leaves no step after it"):
        _variant(exercises["grad_scaler"], at_step=exercises["grad_scaler"].workload.steps - 1)

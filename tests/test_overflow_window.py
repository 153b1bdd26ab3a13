"""The overflow the grader forces is a step inside the graded window: every run goes through it (the FP32
baseline by skipping it), so the steps after it are judged as the recovery, and a lesson can move it and make
the scale grow inside the window."""

import math
from types import SimpleNamespace

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


def test_batchnorm_statistics_moved_by_a_skipped_steps_forward_are_no_applied_step(launcher):
    """A correct skipped step still ran the forward, which moves BatchNorm's running statistics: only parameters
    tell whether the inf gradients were applied, or whether a later step trained again."""
    from test_lesson_evidence import SETUP, lesson

    with_norm = SETUP.replace(
        "nn.Conv2d(3, 8, 3, padding=1), nn.GELU()",
        "nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.GELU()",
    )
    assert with_norm != SETUP
    exercise = lesson(setup=with_norm)
    result = runner.run(exercise, exercise.reference, device="cpu", launcher=launcher)
    assert result.check("overflow").status == "pass", result.check("overflow").to_dict()
    assert result.status == "pass", result.to_dict()


EMA_SETUP = """
import copy
import torch
from torch import nn


def build(seed):
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    return {"model": model, "ema": copy.deepcopy(model), "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}


def batch(step, seed):
    return {"inputs": torch.randn(4, 4, generator=torch.Generator().manual_seed(step))}
"""


def test_only_what_an_optimizer_trains_tells_an_applied_overflow_step():
    """An EMA copy no optimizer holds may move on a skipped step (a lesson's own check judges that); the inf
    gradients can only reach the weights through an optimizer, so the overflow check looks at those alone."""
    from grader.checks import overflow
    from grader.judge.workers import untrained
    from grader.worker.workload import build_problem

    problem = build_problem({"seed": 0, "setup": EMA_SETUP})
    skipped = untrained(problem)
    assert {"ema.0.weight", "ema.2.bias", "model.1.running_mean", "ema.1.running_var"} <= skipped
    assert not any(name.startswith("model.") and not name.startswith("model.1.") for name in skipped)

    before = problem.state()
    ema_moved = {k: v + 1 if k.startswith("ema.") else v for k, v in before.items()}
    trained_again = {k: v + 1 if k == "model.0.weight" else v for k, v in ema_moved.items()}
    record = {"step": 1, "before": before, "after": ema_moved, "scale_before": 4.0, "scale_after": 2.0}
    assert overflow.check(SimpleNamespace(weight=1.0), [record], trained_again, 3, skipped).status == "pass"
    assert overflow.check(SimpleNamespace(weight=1.0), [record], trained_again, 3).status == "fail"


def test_every_parameter_counts_as_trained_where_the_setup_builds_no_optimizer():
    """The learner's prepare builds it (after wrapping or sharding): the grader cannot tell, so it judges all."""
    from grader.judge.workers import untrained
    from grader.worker.workload import build_problem

    setup = EMA_SETUP.replace(', "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)', "")
    problem = build_problem({"seed": 0, "setup": setup})
    assert untrained(problem) == {name for name, _ in problem.root.named_buffers()}


def test_a_forced_overflow_reaches_one_gradient_of_each_optimizer_and_another_on_each_step():
    """A GradScaler skips an optimizer only for an inf among its own gradients, so each optimizer gets one; one
    gradient, not all, so that testing the head's gradient alone misses the overflows elsewhere."""
    import torch
    from torch import nn

    from grader.worker.forced_overflow import poisoned

    a, b = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)), nn.Linear(2, 2)
    opt_a, opt_b = torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.1)
    params = [*a.parameters(), *b.parameters()]
    for step in (3, 5):
        chosen = poisoned(params, step, [opt_a, opt_b])
        assert len(chosen) == 2
        assert any(p is chosen[0] for p in a.parameters()) and any(p is chosen[1] for p in b.parameters())
    assert poisoned(params, 3, [opt_a])[0] is not poisoned(params, 5, [opt_a])[0]
    assert len(poisoned(params, 3)) == 1  # the learner builds the optimizers: one of all

"""The whole grading's budget (grader/judge/budget.py): derived from the trusted runs' own time, it ends a submission
that waits just under every per-request limit, names the step it was on, and never touches a right answer."""

from dataclasses import replace

import pytest
from conftest import TEST_LIMITS

from grader import runner
from grader.judge import budget, timing
from grader.sandboxes.launcher import LocalLauncher

STEP_SLEEP_S = 3.0
SLOW_RIGHT_ANSWER = f"""
import time
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    time.sleep({STEP_SLEEP_S})
    return loss
"""


@pytest.mark.parametrize(
    "trusted, timed, cap, expected",
    [
        ({"baseline": 0.5, "reference": 2.0}, [], None, 10 + 3 * 2.0),  # the 16-bit run sets the pace
        ({"baseline": 0.5}, [], None, 10 + 3 * 0.5 * budget.EMULATED_16BIT),  # only FP32: emulated 16-bit allowed
        ({"baseline": 0.5, "reference": 2.0}, [30.0], None, 10 + 6 + 1.5 * 30),  # timed phases add their budget
        ({"baseline": 0.5, "reference": 2.0}, [], 12.0, 12.0),  # a lesson's cap only tightens
        ({"baseline": 0.5, "reference": 2.0}, [], 999.0, 16.0),
        ({"baseline": None}, [], None, None),  # nothing timed: per-request limits
        ({"baseline": None}, [], 12.0, 12.0),
    ],
)
def test_budget_is_derived_from_the_trusted_runs_time(trusted, timed, cap, expected):
    limits = replace(TEST_LIMITS, budget_floor_s=10.0, budget_factor=3.0)
    assert budget.derived(limits, trusted, timed, cap) == (pytest.approx(expected) if expected else None)


def test_a_trusted_runs_compile_is_budgeted_once_not_scaled_with_its_steps():
    """A compile lesson's reference spent 37 of its 40 s in inductor's C++ compiles: scaled by the factor with
    the steps (30 + 8 x 40 s), that let a submission that never compiles sleep in every step and pass. The
    factor scales the compute; the compile is allowed COMPILE_FACTOR times over."""
    limits = replace(TEST_LIMITS, budget_floor_s=10.0, budget_factor=3.0)
    trusted = {"baseline": 0.5, "reference": 40.0}
    got = budget.derived(limits, trusted, [], None, {"reference": 37.0, "baseline": 0.0})
    assert got == pytest.approx(10 + 3 * 3.0 + budget.COMPILE_FACTOR * 37.0)
    assert got < budget.derived(limits, trusted, [], None)  # without a compile, all of it is compute
    # a reported compile longer than the run itself is only the run
    assert budget.derived(limits, trusted, [], None, {"reference": 99.0}) == pytest.approx(
        10 + budget.COMPILE_FACTOR * 40.0
    )


def test_a_submission_slow_in_every_step_ends_at_the_budget_naming_its_step(exercises):
    """Each step stays far under the per-request limit (10 s here), the whole grading does not: it ends as a
    timeout at the step where the budget ran out, long before the sum of the per-request limits."""
    limits = replace(TEST_LIMITS, budget_floor_s=1.0, budget_factor=1.0)
    exercise = exercises["autocast"]
    result = runner.run(exercise, SLOW_RIGHT_ANSWER, device="cpu", launcher=LocalLauncher(limits))
    assert result.status == "error" and result.error.kind == "timeout"
    part = result.error.parts[0]
    assert part["key"] == "error.budget"
    assert part["params"]["during"]["key"] in ("budget.during_step", "budget.during_step_at")
    step = part["params"]["during"]["params"]["step"]
    assert 1 <= step < exercise.workload.steps and result.error.step == step - 1
    assert "the whole grading may take at most" in result.error.message
    # The whole grading (the trusted runs included, which a loaded CI machine may take seconds over) ends before
    # the learner's steps alone would have: the budget, not the last step, ended it.
    assert result.duration_s < STEP_SLEEP_S * exercise.workload.steps


def test_a_lessons_own_budget_caps_the_derived_one(exercises):
    exercise = exercises["autocast"]
    capped = exercise.model_copy(update={"workload": exercise.workload.model_copy(update={"grading_budget_s": 2.0})})
    result = runner.run(capped, SLOW_RIGHT_ANSWER, device="cpu", launcher=LocalLauncher(TEST_LIMITS))
    assert result.error is not None and result.error.parts[0]["key"] == "error.budget"
    assert result.error.parts[0]["params"]["seconds"] == 2.0


def test_the_reference_passes_well_inside_its_budget(exercises):
    """A right answer with the default floor and factor: the budget is far from what it needs."""
    exercise = exercises["autocast"]
    result = runner.run(exercise, exercise.reference, device="cpu", launcher=LocalLauncher(TEST_LIMITS))
    assert result.status == "pass", result.error


def test_waiting_for_the_device_is_not_taken_from_the_budget():
    """Time a grading waits for another grading's timed rounds (or a trusted run) moves the budget's end."""
    from grader.sandboxes.process import WorkerProcess

    worker = WorkerProcess.__new__(WorkerProcess)
    worker.loaded_at, worker.paused_s, worker.budget_s = 100.0, 0.0, None
    worker.extend_budget(5.0)  # before the budget is known
    worker.set_budget(30.0)
    assert worker.deadline == 135.0
    worker.extend_budget(2.5)
    assert worker.deadline == 137.5 and worker.budget_s == 30.0
    with timing.budget_paused(worker):
        pass
    assert worker.deadline >= 137.5


class _Announced(Exception):
    """Ends the request once the step's new limit was announced: the test needs no worker to answer."""


def test_a_budget_set_while_a_step_runs_announces_the_limit_that_now_applies():
    """The budget is known only once the trusted runs end, often in the middle of a step announced with the step's
    own limit (120 s): the step is announced again with what is left of the budget, which is what ends it."""
    import os
    import threading
    import time
    from types import SimpleNamespace

    from grader.sandboxes.process import WorkerProcess

    worker = WorkerProcess.__new__(WorkerProcess)
    read_fd, write_fd = os.pipe()
    worker.handle = SimpleNamespace(stdout_fd=read_fd, write=lambda data: None)
    worker.limits, worker.cancel, worker._buffer, worker.activity = TEST_LIMITS, threading.Event(), bytearray(), {}
    worker.loaded_at, worker.paused_s, worker.budget_s = time.monotonic(), 0.0, None
    announced = []

    def progress(stage, **info):
        announced.append((stage, info))
        if info.get("budget"):
            raise _Announced

    timing.announce_steps(worker, 8, progress)(2)
    threading.Timer(0.1, worker.set_budget, [5.0]).start()
    try:
        with pytest.raises(_Announced):
            worker.request(None, timeout=10.0)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert announced[0] == ("step", {"n": 3, "total": 8, "limit_s": TEST_LIMITS.step_timeout_s})
    stage, info = announced[1]
    assert stage == "step" and info["n"] == 3 and info["budget"] and 4.0 < info["limit_s"] <= 5.0

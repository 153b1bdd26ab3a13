"""The float16 pass on the CPU (grader/judge/float16_pass.py): which gradings run it, and that it never
diagnoses a right solution, whatever float16 on a CPU does differently from CUDA (its own overflows, a scale that
backs off on its own)."""

from dataclasses import replace

import pytest
from conftest import TEST_LIMITS

from grader.judge import float16_pass
from grader.lesson.loader import load_all
from grader.sandboxes.launcher import LocalLauncher

EXERCISES = load_all()
FLOAT16_LESSONS = sorted(i for i, ex in EXERCISES.items() if float16_pass.applies(ex, "cpu"))

BRANCHES = """import torch


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    if device_type == "cuda":
        torch.cuda.synchronize()
    if amp_dtype == torch.float16:
        scaler.update()
    return None
"""


def test_the_lessons_cuda_runs_in_float16_with_a_scaler_are_the_ones_passed_again_in_float16():
    assert set(FLOAT16_LESSONS) >= {"grad_scaler", "grad_accumulation", "lr_scheduler_skips", "multiple_models"}
    assert "autocast" not in FLOAT16_LESSONS  # bfloat16 on CUDA too: there is no other dtype to run
    assert not float16_pass.applies(EXERCISES["grad_scaler"], "cuda")  # CUDA grades float16 itself


def test_only_a_block_left_unrun_by_something_other_than_the_device_calls_for_the_pass():
    ex = EXERCISES["grad_scaler"]
    # the float16 block ran: only the CUDA one (line 6) is left, which the pass cannot run either
    assert not float16_pass.wanted(ex, "cpu", BRANCHES, {5, 7, 8, 9})
    assert float16_pass.wanted(ex, "cpu", BRANCHES, {5, 7, 9})  # line 8, under the dtype's test, did not run
    assert not float16_pass.wanted(ex, "cpu", BRANCHES, {4, 5, 6, 7, 8, 9})  # every line ran
    assert not float16_pass.wanted(ex, "cpu", BRANCHES, None)  # nothing was watched


@pytest.mark.parametrize("exercise_id", FLOAT16_LESSONS)
def test_a_reference_run_in_float16_on_the_cpu_is_diagnosed_with_nothing(exercise_id):
    ex = EXERCISES[exercise_id]
    # the grading's own limit on a step (60 s by default), not the suite's 10 s: a worker's first step also loads
    # what tracing and checkpointing import, which takes over 10 s on a loaded 2-core machine
    run = float16_pass.run_pass(LocalLauncher(replace(TEST_LIMITS, step_timeout_s=60)), ex, ex.reference, "cpu")
    assert run.failure is None, run.failure
    assert run.traces and run.lines_run
    assert float16_pass.findings(ex, run) == []


def test_a_pass_that_stopped_still_ran_its_traced_calls_and_the_line_that_raised():
    stopped = float16_pass.Float16Run(
        traces=[{"events": [{"ev": "cast_model", "line": 8}], "partial": True}],
        lines_run=set(),
        failure={"kind": "exception", "line": 9},
    )
    assert float16_pass.lines_after({5, 7}, stopped) == {5, 7, 8, 9}
    assert float16_pass.lines_after(None, stopped) is None  # the grading lost count: still unknown
    timed_out = float16_pass.Float16Run(lines_run=set(), failure={"kind": "timeout", "line": 9})
    assert float16_pass.lines_after({5, 7}, timed_out) == {5, 7}  # a timeout's line may not have run to its end

"""What the parity check (grader/checks/parity.py) says about the steps it compared: an overflowed step's loss is
left out of the loss comparison, but the step ran and its update counts."""

from types import SimpleNamespace

import torch

from grader.checks import parity
from grader.checks.coverage import check as coverage_check
from grader.lesson.check_specs import ParityCheck

SPEC = ParityCheck(id="parity", tolerances={"bfloat16": {"loss_rtol": 0.02, "update_rtol": 0.05}})
START = {"w": torch.zeros(4), "v": torch.zeros(4)}
BASE = {"w": torch.ones(4), "v": torch.ones(4)}


def test_a_pass_counts_the_steps_that_ran_and_says_how_many_losses_were_compared():
    # 8 steps ran; steps 2 and 5 overflowed, so 6 losses are compared
    result = parity.check(SPEC, "bfloat16", [1.0] * 6, [1.0] * 6, BASE, BASE, START, steps=[0, 1, 3, 4, 6, 7], ran=8)
    assert result.status == "pass"
    assert "over 8 steps" in result.message and "6 steps that did not overflow" in result.message
    assert result.measured["steps"] == 8


def test_a_loss_that_differs_is_named_by_its_step_number_not_its_place_among_the_compared_losses():
    sub = [1.0, 1.0, 1.0, 1.5, 1.0, 1.0]  # the 4th compared loss: step 4, steps 2 and 3 having overflowed
    result = parity.check(SPEC, "bfloat16", sub, [1.0] * 6, BASE, BASE, START, steps=[0, 1, 4, 5, 6, 7], ran=8)
    assert result.status == "fail"
    assert "at step 5" in result.message, result.message
    assert result.measured["at_step"] == 5


def test_a_loss_off_with_every_update_matching_points_at_the_returned_loss_not_at_the_update():
    spec = SPEC.model_copy(update={"advice": {"en": "In this lesson the update differs when the loss is divided."}})
    off = {"w": torch.ones(4) * 2, "v": torch.ones(4)}
    loss_only = parity.check(spec, "bfloat16", [1.0, 1.5], [1.0, 1.0], BASE, BASE, START)
    update_too = parity.check(spec, "bfloat16", [1.0, 1.5], [1.0, 1.0], off, BASE, START)
    assert loss_only.status == update_too.status == "fail"
    assert "the update differs" not in loss_only.message and "loss the step returns" in loss_only.message
    assert "the update differs" in update_too.message


def test_a_layer_frozen_by_an_optimizer_over_other_tensors_is_not_told_about_checkpointing():
    sub = {"w": torch.ones(4), "v": torch.zeros(4)}  # v never moved
    plain = parity.check(SPEC, "bfloat16", [1.0], [1.0], sub, BASE, START)
    stale = parity.check(SPEC, "bfloat16", [1.0], [1.0], sub, BASE, START, stale_optimizer=True)
    assert [f.id for f in plain.findings] == [f.id for f in stale.findings] == ["block_not_trained"]
    assert "checkpointing" in plain.findings[0].fix
    assert "checkpointing" not in stale.findings[0].fix and "model.parameters()" in stale.findings[0].fix


def test_in_a_policy_lesson_no_coverage_fix_asks_for_autocast():
    spec = SimpleNamespace(min_fraction=0.9, weight=1.0)
    none = coverage_check(
        spec,
        {"flops": {"float32": 100}, "by_module": {"0": {"float32": 100}}},
        str,
        None,
        "bfloat16",
        policy_lesson=True,
    )
    some = coverage_check(
        spec,
        {"flops": {"float32": 50, "bfloat16": 50}, "by_module": {"0": {"float32": 50}}},
        str,
        None,
        "bfloat16",
        policy_lesson=True,
    )
    fixes = [f.fix for r in (none, some) for f in r.findings]
    assert len(fixes) == 2 and not any("torch.autocast" in fix or "autocast block" in fix for fix in fixes), fixes
    assert "autocast" not in none.message, none.message
    assert "MixedPrecisionPolicy(param_dtype=torch.bfloat16" in fixes[0]

"""The speedup check, end to end with real processes and the statistics."""

import math

import pytest
from conftest import FIXTURES

from grader import runner
from grader.judge.timing import RatioEstimate, TimingPlan, estimate, t999
from grader.lesson.loader import load_exercise_file


def test_interval_is_tight_for_steady_ratios():
    est = estimate([2.0, 2.02, 1.98, 2.01, 2.0], [1.0, 1.0, 1.0, 1.0, 1.0])
    assert est.low < 2.0 < est.high
    assert est.relative_half_width < 0.02


def test_interval_is_wide_for_noisy_ratios():
    est = estimate([3.0, 1.0, 2.5, 0.8, 2.0], [1.0] * 5)
    assert est.high / est.low > 2


def test_a_single_round_proves_nothing():
    est = estimate([2.0], [1.0])
    assert est.low == 0.0 and math.isinf(est.high)


def test_plan_stops_on_tight_interval_or_budget():
    plan = TimingPlan(min_rounds=3, budget_s=10)
    assert plan.done(RatioEstimate(2.0, 1.99, 2.01, 3), 1.0)
    assert not plan.done(RatioEstimate(2.0, 1.5, 2.5, 3), 1.0)
    assert plan.done(RatioEstimate(2.0, 1.5, 2.5, 3), 11.0)
    assert plan.block_steps(0.01) == 5


def test_timing_stops_early_once_a_strict_interval_decides_the_verdict():
    plan = TimingPlan(min_rounds=5, target_half_width=0.0001, threshold=1.2)
    clear_pass = ([2.0, 2.1, 1.9, 2.05, 1.95], [1.0] * 5)
    clear_fail = ([0.8, 0.82, 0.79, 0.81, 0.8], [1.0] * 5)
    borderline = ([1.25, 1.15, 1.3, 1.1, 1.22], [1.0] * 5)
    for times, decided in ((clear_pass, True), (clear_fail, True), (borderline, False)):
        est, strict = estimate(*times), estimate(*times, quantile=t999)
        assert strict.low <= est.low and strict.high >= est.high  # the strict interval contains the 95% one
        assert plan.done(est, 1.0, strict) is decided, times
    assert not TimingPlan(min_rounds=5, target_half_width=0.0001).done(
        estimate(*clear_pass), 1.0, estimate(*clear_pass, quantile=t999)
    )  # no threshold: only a tight interval


@pytest.fixture(scope="module")
def timed():
    return load_exercise_file(FIXTURES / "exercises" / "timed.yaml")


def test_faster_submission_passes_on_the_lower_bound(timed, launcher):
    result = runner.run(timed, timed.reference, device="cpu", launcher=launcher)
    speed = result.check("speedup")
    assert speed.status == "pass", speed
    assert speed.measured["ci95_low"] >= 2.0
    assert result.plots["timing"]["baseline_s"] and result.plots["timing"]["submission_s"]


def test_slower_submission_fails_with_the_measured_ratio(timed, launcher):
    result = runner.run(timed, timed.starter, device="cpu", launcher=launcher)
    speed = result.check("speedup")
    assert speed.status == "fail"
    assert speed.measured["speedup"] < 1.0
    assert "lower bound" in speed.message


def test_patching_the_clock_does_not_fake_a_speedup(timed, launcher):
    cheat = timed.starter.replace(
        "import time", "import time\ntime.perf_counter = lambda: 0.0\ntime.monotonic = lambda: 0.0"
    )
    result = runner.run(timed, cheat, device="cpu", launcher=launcher)
    assert result.check("speedup").status == "fail"

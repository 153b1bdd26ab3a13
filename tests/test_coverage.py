"""The coverage check's direction test judges only what it can compare: a trusted run of the same dtype."""

from types import SimpleNamespace

from grader.checks import coverage

SPEC = SimpleNamespace(min_fraction=0.9, weight=1.0)
NEAR_FP32 = {"to_fp32": 0.0003, "to_amp": 0.003, "amp_vs_fp32": 0.003, "toward_amp": 0.0, "near": 0.05}


def grade(flops, amp_dtype):
    return coverage.check(SPEC, {"flops": flops, "by_module": {}}, str, NEAR_FP32, amp_dtype)


def test_weights_near_fp32_with_the_lessons_dtype_are_float32_numbers():
    result = grade({"bfloat16": 100}, "bfloat16")
    assert result.status == "fail" and [f.id for f in result.findings] == ["numbers_fp32"]


def test_a_float16_run_is_not_called_float32_against_a_bfloat16_reference():
    """float16 rounds closer to float32 than bfloat16: near the FP32 run is what a real float16 run looks like."""
    result = grade({"float16": 100}, "bfloat16")
    assert result.status == "pass" and not result.findings
    assert "not judged" in result.measured["direction_test"]


def test_float8_counts_a_submission_reports_do_not_lift_the_direction_test_outside_an_fp8_lesson():
    """The counts come from the learner's process; only the lesson decides that there is no trusted direction."""
    result = grade({"bfloat16": 100, "float8_e4m3fn": 1}, "bfloat16")
    assert result.status == "fail" and [f.id for f in result.findings] == ["numbers_fp32"]


def test_an_fp8_lesson_leaves_the_direction_test_out():
    result = coverage.check(SPEC, {"flops": {"float8_e4m3fn": 100}, "by_module": {}}, str, NEAR_FP32, "bfloat16", True)
    assert result.status == "pass" and "not judged" in result.measured["direction_test"]

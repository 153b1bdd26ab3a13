"""A lesson's examples guard every check, not only the ones they list: `others: pass` (the default for a right
example) holds every unlisted check to pass or not apply, and `absent` names findings that must not appear."""

import pytest
from conftest import FIXTURES
from pydantic import ValidationError

from grader.authoring.validate import example_mismatches
from grader.lesson.loader import parse_exercise
from grader.lesson.schema import ExampleExpectation
from grader.results import CheckResult, Finding, GradingResult


def verdict(**checks) -> GradingResult:
    """A verdict with these check statuses; a status "fail:finding_id" also carries that finding."""
    out = []
    for check_id, status in checks.items():
        status, _, found = status.partition(":")
        findings = [Finding(found, "a mistake", "fix it")] if found else []
        out.append(CheckResult(check_id, status, "measured", findings=findings))
    return GradingResult("lesson", "cpu", "bfloat16", checks=out)


def test_a_wrong_example_with_others_pass_fails_when_an_unlisted_check_fails():
    expect = ExampleExpectation(status="fail", checks={"call_order": "fail"}, others="pass")
    assert example_mismatches(expect, verdict(call_order="fail", parity="pass", speedup="not_applicable")) == []
    said = example_mismatches(expect, verdict(call_order="fail", parity="fail", coverage="error"))
    assert said == [
        "check parity fail, expected pass (others: pass)",
        "check coverage error, expected pass (others: pass)",
    ]


def test_a_wrong_example_leaves_unlisted_checks_unguarded_unless_it_says_so():
    expect = ExampleExpectation(status="fail", checks={"call_order": "fail"})
    assert example_mismatches(expect, verdict(call_order="fail", parity="fail")) == []


def test_a_right_example_holds_every_check_to_pass_by_default():
    said = example_mismatches(ExampleExpectation(status="pass"), verdict(parity="pass", coverage="fail"))
    assert "check coverage fail, expected pass (others: pass)" in said
    assert example_mismatches(ExampleExpectation(status="pass", others="any", checks={}), verdict(parity="pass")) == []


def test_an_absent_finding_that_appears_is_a_mismatch():
    expect = ExampleExpectation(status="fail", findings=["loss_not_divided"], absent=["micro_batch_skipped"])
    assert example_mismatches(expect, verdict(call_order="fail:loss_not_divided")) == []
    said = example_mismatches(expect, verdict(call_order="fail:micro_batch_skipped"))
    assert "a micro_batch_skipped finding, expected none (absent)" in said


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"status": "fail", "others": "pass"}, "list the check that fails"),
        ({"status": "error", "others": "pass", "error": "exception"}, "cannot hold for an error example"),
        ({"status": "fail", "findings": ["a"], "absent": ["a"]}, "findings and absent both name a"),
    ],
)
def test_an_expectation_that_no_verdict_can_meet_is_refused(fields, message):
    with pytest.raises(ValidationError, match=message):
        ExampleExpectation(**fields)


def test_a_contradictory_expectation_is_reported_at_its_line(tmp_path):
    text = (FIXTURES / "exercises" / "weak.yaml").read_text()
    old = "expect: {status: fail, checks: {parity: fail}}"
    target = tmp_path / "weak.yaml"
    target.write_text(text.replace(old, "expect: {status: fail, others: pass}"))
    exercise, problems = parse_exercise(target)
    line = text[: text.index(old)].count("\n") + 1
    assert exercise is None and [(p.line, p.field) for p in problems] == [(line, "examples[0].expect.others")], problems

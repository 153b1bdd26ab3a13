"""A lesson's `advice` for a built-in check (grader/lesson/check_specs.py, BuiltInCheck): the author knows
what a failure of this check usually means in this lesson better than the generic wording does. Parity puts
it into its own message (grader/checks/parity.py); for every other check it is applied here, once the check
has judged."""

from __future__ import annotations

from dataclasses import replace

from grader.lesson.base import localize
from grader.results import FAIL, CheckResult
from grader.wording.catalog import Said, own


def advised(spec, result: CheckResult) -> CheckResult:
    """The failed check with the lesson's advice as the fix of each of its findings; a failure without findings
    gets the advice after its message. A check that passed, or that the lesson gives no advice for, is kept."""
    advice = getattr(spec, "advice", None)
    if advice is None or spec.id == "parity" or result.status != FAIL:
        return result
    said = own(advice)
    errors = [f for f in result.findings if f.severity == "error"]
    if not errors:
        parts = [*(Said.of(p) for p in result.parts or [result.message]), said]
        return replace(result, message=parts, parts=[])
    fix = {"fix": said.to_dict()}
    findings = [
        replace(f, fix=localize(advice), text={**(f.text or {}), **fix}) if f.severity == "error" else f
        for f in result.findings
    ]
    return replace(result, findings=findings)

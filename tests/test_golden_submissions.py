"""Every file under tests/submissions/<exercise>/ is graded for real and must
produce what its `# expect-...` header says (status, findings, checks,
error kind and learner line). Files under errors/ use the autocast lesson."""

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import SUBMISSIONS, TEST_LIMITS, expectations

from grader import runner
from grader.sandboxes.zygote import ForkLauncher

CASES = sorted(SUBMISSIONS.glob("*/*.py"))


def _exercise_of(path: Path) -> str:
    return "autocast" if path.parent.name == "errors" else path.parent.name


@pytest.fixture(scope="module")
def roomy_launcher():
    """For code that must end at the memory limit: a step limit with room for the kernel to get there under the
    suite's load (filling 1.5 GiB took over 10 s in one loaded run), so the verdict is the limit it hit."""
    launcher = ForkLauncher(replace(TEST_LIMITS, step_timeout_s=40))
    yield launcher
    launcher.close()


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_submission_is_graded_as_its_header_says(path, grade, exercises, roomy_launcher):
    expected = expectations(path)
    if expected["error"] and expected["error"]["kind"] == "oom":
        result = runner.run(exercises[_exercise_of(path)], path.read_text(), device="cpu", launcher=roomy_launcher)
    else:
        result = grade(_exercise_of(path), path.read_text())
    doc = result.to_dict()
    assert result.status == expected["status"], doc
    found = {f.id for c in result.checks for f in c.findings}
    for finding in expected["findings"]:
        assert finding in found, f"expected diagnosis {finding!r}, got {sorted(found)}"
    lines = {f.id: f.line for c in result.checks for f in c.findings}
    for finding, line in expected["finding_lines"].items():
        assert lines[finding] == line, f"{finding} names line {lines[finding]}, the mistake is on line {line}"
    for finding in expected["absent"]:
        assert finding not in found, f"{finding!r} was diagnosed, but the code does not do that: {doc}"
    for check_id, status in expected["checks"].items():
        assert result.check(check_id).status == status, result.check(check_id)
    text = " ".join(c.message for c in result.checks)
    for message in expected["messages"]:
        assert message in text
    for message in expected["unsaid"]:  # a diagnosis that would be false of this code
        assert message not in text, text
    if expected["error"]:
        assert result.error is not None
        assert result.error.kind == expected["error"]["kind"], result.error
        if "line" in expected["error"]:
            assert result.error.line in {int(n) for n in expected["error"]["line"].split("|")}, result.error
    notes = {((n.text or {}).get("message", {}).get("key"), n.line) for n in result.notes}
    notes |= {(n.id, n.line) for n in result.notes}
    for note, line in expected["notes"]:
        assert any(k == note and (line is None or at == line) for k, at in notes), f"no note {note} at {line}: {notes}"
    for note in expected["absent_notes"]:
        assert all(k != note for k, _ in notes), f"{note!r} was noted, but the code does not do that: {notes}"
    # every diagnosis tells the learner how to fix it
    for check in result.checks:
        for finding in check.findings:
            assert finding.fix and finding.message

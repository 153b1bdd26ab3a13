"""A lesson names finding ids in what it expects (`expect.findings`, `expect.absent`) and in what must catch its
mutants (`caught_by.findings`): `grader validate` refuses an id no check can give, at its line, before grading."""

import yaml
from conftest import ROOT

from grader.authoring import finding_ids
from grader.authoring.lesson_mutants import missed
from grader.authoring.validate import validate_file
from grader.lesson.loader import exercise_files
from grader.lesson.mutant_spec import LessonMutant
from grader.results import CheckResult, Finding, GradingResult

CHANNELS_LAST = ROOT / "exercises" / "channels_last.yaml"


def test_every_shipped_lesson_names_only_finding_ids_its_checks_can_give():
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    named = {path.name: finding_ids.unknown(yaml.load(path.read_text(), loader)) for path in exercise_files()}
    assert len(named) > 10 and {name: ids for name, ids in named.items() if ids} == {}


def test_a_misspelt_finding_id_is_a_problem_at_its_line_and_field_with_the_id_it_resembles(tmp_path):
    text = CHANNELS_LAST.read_text()
    typo = "caught_by: {checks: [memory_format], findings: [model_not_channel_last]}"
    text = text.replace("caught_by: {checks: [memory_format], findings: [model_not_channels_last]}", typo, 1)
    text = text.replace("findings: [batch_not_channels_last], checks:", "findings: [blok_not_trained], checks:", 1)
    path = tmp_path / "channels_last.yaml"
    path.write_text(text)
    lines = text.splitlines()
    report = validate_file(path, grade=False)
    mutant_line = next(i for i, line in enumerate(lines, 1) if typo in line)
    example_line = next(i for i, line in enumerate(lines, 1) if "blok_not_trained" in line)
    assert any(
        p.startswith(f"{path}:{mutant_line}: mutants.lesson[2].caught_by.findings[0]: 'model_not_channel_last' is no")
        and "did you mean 'model_not_channels_last'?" in p
        for p in report.problems
    ), report.problems
    assert any(
        p.startswith(f"{path}:{example_line}: examples[")
        and "'blok_not_trained' is no finding id" in p
        and "did you mean 'block_not_trained'?" in p
        for p in report.problems
    ), report.problems


def test_a_mutant_caught_otherwise_says_what_was_found_instead():
    mutant = LessonMutant(
        name="m", why="w", replace={"pattern": "a", "replacement": "b"}, caught_by={"findings": ["wanted"]}
    )
    found = Finding("other_one", "m", "f")
    result = GradingResult("x", "cpu", "bfloat16", checks=[CheckResult("parity", "fail", "off", findings=[found])])
    assert missed(mutant, result) == ["no wanted finding (found: other_one)"]

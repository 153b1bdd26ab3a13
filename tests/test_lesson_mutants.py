"""A lesson's own mutants: edits of its reference that must fail where the lesson says, scored apart from the
generic mutants; an edit that does not apply is an error of the lesson file at its line."""

import pytest
from conftest import FIXTURES

from grader.authoring import lesson_mutants
from grader.authoring.validate import Report, survivor_problems
from grader.lesson.base import skipped_here
from grader.lesson.loader import load_all, parse_exercise
from grader.lesson.mutant_spec import LessonMutant, edited

SHIPPED = [(ex.id, m.name) for ex in load_all().values() for m in ex.mutants.lesson]

STEP = """import torch


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    with torch.autocast("cpu"):
        loss = model(inputs).sum()
    loss.backward()
    return loss
"""


def mutant(**edit) -> LessonMutant:
    return LessonMutant(name="m", why="a mistake", **edit)


@pytest.mark.parametrize("exercise_id,name", SHIPPED, ids=[f"{e}-{m}" for e, m in SHIPPED])
def test_every_lesson_mutant_of_a_shipped_lesson_is_caught_where_it_says(exercise_id, name, exercises, grade):
    ex = exercises[exercise_id]
    i, m = next((i, m) for i, m in enumerate(ex.mutants.lesson) if m.name == name)
    if reason := skipped_here(m.devices, "cpu", f"mutants.lesson[{i}]"):  # the suite grades on the CPU
        pytest.skip(reason)
    result = grade(exercise_id, edited(ex.reference, m))
    judged = lesson_mutants.judge(m, result)
    assert judged.killed, (judged.status, judged.missed, [(c.id, c.status) for c in result.checks])


def test_the_lessons_whose_point_no_generic_mutant_touches_declare_their_own(exercises):
    for lesson in ("autocast", "grad_accumulation", "grad_scaler"):
        assert len(exercises[lesson].mutants.lesson) >= 2, lesson


def test_a_deleted_statement_becomes_pass_so_the_lines_keep_their_numbers():
    out = edited(STEP, mutant(statement={"at": r"zero_grad"}))
    assert out.splitlines()[4] == "    pass" and len(out.splitlines()) == len(STEP.splitlines())


def test_a_rewritten_compound_statement_is_replaced_with_its_whole_block_at_its_indentation():
    out = edited(STEP, mutant(statement={"at": r"with torch\.autocast", "becomes": "loss = model(inputs).sum()\n"}))
    assert "autocast" not in out and "    loss = model(inputs).sum()\n    loss.backward()" in out


def test_a_regex_edit_must_match_as_many_times_as_it_says():
    with pytest.raises(ValueError, match="matches the reference 2 times, not 1"):
        edited(STEP, mutant(replace={"pattern": r"model\(inputs\)|return loss", "replacement": "x"}))
    out = edited(STEP, mutant(replace={"pattern": r"^(\s*)(loss\.backward\(\))$", "replacement": r"\1    \2"}))
    assert "        loss.backward()" in out


def test_an_edit_that_changes_nothing_or_breaks_the_syntax_is_refused():
    with pytest.raises(ValueError, match="changes nothing"):
        edited(STEP, mutant(replace={"pattern": "zero_grad", "replacement": "zero_grad"}))
    with pytest.raises(ValueError, match="not valid Python"):
        edited(STEP, mutant(replace={"pattern": r"\):$", "replacement": ")", "count": 2}))
    with pytest.raises(ValueError, match="matches 0 lines"):
        edited(STEP, mutant(statement={"at": "scaler"}))


def test_a_lesson_mutant_whose_edit_no_longer_applies_is_a_problem_at_its_line(tmp_path):
    text = (FIXTURES / "exercises" / "weak.yaml").read_text()
    target = tmp_path / "weak.yaml"
    target.write_text(
        text + "mutants:\n  lesson:\n    - name: gone\n      why: a line the reference no longer has\n"
        "      statement: {at: 'scaler\\.update'}\n"
    )
    exercise, problems = parse_exercise(target)
    assert exercise is None
    line = len(text.splitlines()) + 3
    assert [(p.line, p.field) for p in problems] == [(line, "mutants.lesson[0]")], problems
    assert "gone: statement.at matches 0 lines" in problems[0].message


def test_a_surviving_or_wrongly_caught_lesson_mutant_is_a_problem_and_scored_apart(launcher, tmp_path):
    """weak.yaml's parity tolerance (1000%) cannot see a learning rate; coverage sees autocast turned off."""
    target = tmp_path / "weak.yaml"
    target.write_text(
        (FIXTURES / "exercises" / "weak.yaml").read_text() + "mutants:\n  lesson:\n"
        "    - name: lr_raised\n      why: the learning rate raised by half\n"
        "      statement: {at: 'optimizer\\.step', becomes: \"for g in optimizer.param_groups: g['lr'] = 0.03\\n"
        'optimizer.step()"}\n'
        "    - name: autocast_off\n      why: autocast disabled\n"
        "      replace: {pattern: 'dtype=amp_dtype\\)', replacement: 'dtype=amp_dtype, enabled=False)'}\n"
        "      caught_by: {checks: [parity]}\n"
    )
    exercise, problems = parse_exercise(target)
    assert not problems, problems
    results = lesson_mutants.run_all(exercise, device="cpu", launcher=launcher)
    survived, missed = results
    assert survived.status == "pass" and not survived.killed and survived.kind == "lesson"
    assert missed.status == "fail" and "coverage" in missed.failed_checks and not missed.killed
    assert missed.missed == ["check parity pass"]
    said = survivor_problems(results)
    assert "the lesson mutant 'lr_raised'" in said[0] and "passes every check" in said[0]
    assert "'autocast_off'" in said[1] and "not as its caught_by says: check parity pass" in said[1]
    report = Report(target, mutants=results)
    assert report.mutation_scores == {"lesson": 0.0}

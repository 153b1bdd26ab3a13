"""An instructor's mistake in a lesson file is reported as file:line: field."""

import json
import re
from pathlib import Path

import pytest
import yaml

from grader.errors import ExerciseError
from grader.lesson.loader import load_exercise_file, parse_exercise
from grader.lesson.schema import Exercise

ROOT = Path(__file__).resolve().parent.parent


def _copy(tmp_path, edit, name="autocast"):
    text = (ROOT / "exercises" / "autocast.yaml").read_text()
    path = tmp_path / f"{name}.yaml"
    path.write_text(edit(text))
    return path


def test_shipped_lessons_have_no_problems():
    for path in sorted((ROOT / "exercises").glob("*.yaml")):
        exercise, problems = parse_exercise(path)
        assert not problems and exercise.id == path.stem


def test_negative_learning_rate_names_line_and_field(tmp_path):
    path = _copy(tmp_path, lambda t: t.replace("lr: 0.02", "lr: -1"))
    _, problems = parse_exercise(path)
    assert len(problems) == 1
    line = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if "lr: -1" in ln)
    assert problems[0].line == line
    assert problems[0].field == "workload.optimizer.lr"
    assert "greater than 0" in problems[0].message


def test_misspelled_field_is_rejected_not_ignored(tmp_path):
    path = _copy(tmp_path, lambda t: t.replace("hints:", "hintz:"))
    _, problems = parse_exercise(path)
    fields = {p.field for p in problems}
    assert "hintz" in fields and "hints" in fields
    assert any("unknown field" in p.message for p in problems)


def test_unknown_check_id_lists_the_known_ones(tmp_path):
    path = _copy(tmp_path, lambda t: t.replace("- id: coverage", "- id: coverge"))
    _, problems = parse_exercise(path)
    assert problems[0].field.startswith("checks[2]")
    assert "call_order" in problems[0].message


def test_broken_yaml_gives_the_line(tmp_path):
    path = _copy(tmp_path, lambda t: t.replace("order: 1", "order: [1"))
    _, problems = parse_exercise(path)
    assert problems[0].line is not None and "not valid YAML" in problems[0].message


def test_file_name_must_match_id(tmp_path):
    path = _copy(tmp_path, lambda t: t, name="other")
    _, problems = parse_exercise(path)
    assert problems[0].field == "id" and problems[0].line == 1


def test_unknown_entrypoint_parameter_is_an_error(tmp_path):
    path = _copy(
        tmp_path, lambda t: t.replace("params: [model, optimizer, inputs", "params: [model, optimizer, labels")
    )
    with pytest.raises(ExerciseError, match=r"entrypoint\.params\[2\]"):
        load_exercise_file(path)


def test_quiz_answer_must_index_a_choice(tmp_path):
    path = _copy(tmp_path, lambda t: t.replace("answer: 2", "answer: 9"))
    _, problems = parse_exercise(path)
    assert problems[0].field == "quiz[0].answer" and "9 is not an index of choices" in problems[0].message
    assert problems[0].line == next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if "answer: 9" in ln)


def test_reference_is_not_public():
    data = yaml.safe_load((ROOT / "exercises" / "autocast.yaml").read_text())
    public = Exercise.model_validate(data).public()
    assert "reference" not in json.dumps(public) and data["reference"] not in json.dumps(public)


def test_committed_json_schema_is_current():
    committed = json.loads((ROOT / "docs" / "exercise.schema.json").read_text())
    assert committed == Exercise.model_json_schema()


def test_unknown_field_names_the_fields_the_format_supports_there(tmp_path):
    path = _copy(tmp_path, lambda t: t.replace("in_features: 128,", "in_channels: 3, in_features: 128,", 1))
    _, problems = parse_exercise(path)
    assert len(problems) == 1 and problems[0].field == "workload.model.in_channels"
    assert "unknown field 'in_channels'" in problems[0].message
    assert "in_features, hidden, out_features" in problems[0].message


def test_one_broken_lesson_file_is_skipped_and_named_not_fatal(tmp_path, monkeypatch):
    from grader.lesson.loader import load_all

    _copy(tmp_path, lambda t: t.replace("id: autocast", "id: extra", 1), name="extra")
    _copy(tmp_path, lambda t: t.replace("id: autocast", "id: broken", 1).replace("hints:", "hintz:"), name="broken")
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path))
    problems = []
    lessons = load_all(problems=problems)
    assert {"autocast", "reduce_memory", "extra"} <= set(lessons) and "broken" not in lessons
    assert problems and all(str(p.path).endswith("broken.yaml") and p.line for p in problems)


def test_exercises_variable_adds_folders_and_a_missing_one_is_an_error(tmp_path, monkeypatch):
    from grader.errors import ExerciseError
    from grader.lesson.loader import exercise_dirs, load_exercise

    _copy(tmp_path, lambda t: t.replace("id: autocast", "id: extra", 1), name="extra")
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path))
    assert load_exercise("extra").id == "extra" and load_exercise("autocast").id == "autocast"
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path / "nowhere"))
    with pytest.raises(ExerciseError, match="nowhere"):
        exercise_dirs()


def test_a_lesson_id_in_two_folders_is_reported_once_loaded(tmp_path, monkeypatch):
    from grader.lesson.loader import load_all

    _copy(tmp_path, lambda t: t)
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path))
    problems = []
    assert "autocast" in load_all(problems=problems)
    assert any("already has a lesson 'autocast'" in p.message for p in problems)


def test_a_starter_translation_may_reword_its_comments_and_learners_of_that_language_get_it():
    exercise = load_exercise_file(ROOT / "exercises" / "autocast.yaml")
    assert "# TODO: esegui il forward pass" in exercise.starter_in("it")
    assert "# TODO: jalankan forward pass" in exercise.starter_in("id")
    assert exercise.starter_in("en") == exercise.starter
    assert exercise.starter_in("it") != exercise.starter and exercise.starter_in("id") != exercise.starter


@pytest.mark.parametrize(
    "edit,says",
    [
        (
            lambda t: t.replace("    # TODO: esegui", "    output = None  # TODO: esegui"),
            "its line 7 has 'output = None",
        ),
        (
            lambda t: t.replace("        optimizer.step()\n        return loss\n  id:", "        return loss\n  id:"),
            "its line",
        ),
        (lambda t: t.replace("        return loss\n  id:", "        return loss\n    x = 1\n  id:"), "goes on after"),
        (lambda t: t.replace("    # TODO: esegui", "    ( # TODO: esegui"), "is not Python"),
    ],
    ids=["a_changed_line", "a_line_left_out", "a_line_added", "not_python"],
)
def test_a_starter_translation_that_changes_the_code_names_the_language_and_the_line(tmp_path, edit, says):
    path = _copy(tmp_path, edit)
    _, problems = parse_exercise(path)
    assert [p.field for p in problems] == ["starter_translations.it"], problems
    lines = path.read_text().splitlines()
    named = re.search(r"its line \d+ (?:\(|has )'([^']*)'", problems[0].message)
    if named:  # the file line of the translation's line that differs, not the start of its block
        assert lines[problems[0].line - 1].strip() == named.group(1)
    else:
        assert lines[problems[0].line - 2 : problems[0].line] == ["starter_translations:", "  it: |"]
    assert says in problems[0].message


def test_a_compile_warmup_that_would_warm_nothing_names_its_line_and_field(tmp_path):
    text = (ROOT / "exercises" / "compile_autocast.yaml").read_text()
    compiled = "          return torch.compile(model)\n\n\n      def train_step"
    assert text.count(compiled) == 1
    for edit, says in (
        ("          return torch.compile(model\n\n\n      def train_step", "not valid Python (line 6"),
        ("          return model\n\n\n      def train_step", "never calls torch.compile"),
    ):
        path = tmp_path / "compile_autocast.yaml"
        path.write_text(text.replace(compiled, edit))
        exercise, problems = parse_exercise(path)
        assert exercise is None
        assert [p.field for p in problems] == ["compile_warmups[0].code"] and says in problems[0].message, problems
        assert text.splitlines()[problems[0].line - 1].strip() == "code: |", problems


def test_compile_warmups_on_a_lesson_that_never_compiles_are_refused(tmp_path):
    warmup = "compile_warmups:\n  - why: the model compiled\n    code: |\n      import torch\n      torch.compile\n"
    exercise, problems = parse_exercise(_copy(tmp_path, lambda text: text + warmup))
    assert exercise is None
    assert [p.field for p in problems] == ["compile_warmups"], problems
    assert "the reference never calls torch.compile" in problems[0].message

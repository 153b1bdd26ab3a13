"""`grader validate` says everything at once: every problem of a lesson file in one run, each at the file line of
the exact place (inside `|` blocks too), and the warnings beside them, which refuse nothing."""

import re
import shutil

from click.testing import CliRunner
from conftest import FIXTURES

from grader.authoring.validate import learning_problem, validate_file
from grader.cli import main

TEN = FIXTURES / "ten_problems.yaml"


def marked(path, letter: str) -> dict[int, int]:
    """Marker number -> file line, from the `# P3` / `# W1` comments of the fixture."""
    return {
        int(m.group(1)): n
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if (m := re.search(rf"# {letter}(\d+)\b", line))
    }


def test_ten_problems_are_all_reported_in_one_run_each_at_its_file_line(tmp_path):
    path = tmp_path / "ten.yaml"  # not the id's name: problem 1
    shutil.copy(TEN, path)
    report = validate_file(path, grade=False)
    lines = marked(path, "P")
    assert sorted(lines) == list(range(1, 11))
    fields = {
        1: "id",
        2: "order",
        3: "lesson.en",
        4: "examples[0].expect.status",
        5: "reference",
        6: "starter_translations.it",
        7: "quiz[0].answer",
        8: "workload.setup",
        9: "checks[2].min_fraction",
        10: "checks[3].python",
    }
    where = [re.match(rf"{re.escape(str(path))}:(\d+): (\S+): ", p) for p in report.problems]
    assert all(where), report.problems
    assert sorted((int(m.group(1)), m.group(2)) for m in where) == sorted(
        (lines[n], field) for n, field in fields.items()
    ), "\n".join(report.problems)


def test_warnings_are_printed_at_their_lines_and_refuse_nothing(tmp_path):
    path = tmp_path / "ten.yaml"
    shutil.copy(TEN, path)
    report = validate_file(path, grade=False)
    lines = marked(path, "W")
    at = {
        n: next((w for w in report.warnings if w.startswith(f"{path}:{line}: warning:")), None)
        for n, line in lines.items()
    }
    assert "draws from the global random generator of torch" in at[1], report.warnings
    assert "graded in float16 on CUDA" in at[2] and "tolerances.float16" in at[2], report.warnings
    assert "'no_stepp' is not a mutant" in at[3], report.warnings
    assert len(report.warnings) == 3
    result = CliRunner().invoke(main, ["validate", "--schema-only", str(path)])
    assert result.exit_code == 1 and all(w in result.output for w in report.warnings)


def test_a_rising_loss_is_called_divergence_and_the_advice_is_a_smaller_learning_rate():
    said = learning_problem("x.yaml:40", [2.3, 2.9, 5.7])
    assert "diverges" in said and "rises from 2.300 to 5.700" in said and "lower optimizer.lr" in said
    assert "raise" not in said and "-" not in said.split("over")[0]
    assert "diverges" in learning_problem("x.yaml:40", [2.3, float("nan")])
    assert "falls only 4%" in learning_problem("x.yaml:40", [2.3, 2.2])


def test_a_graded_problem_is_printed_at_its_line_too_inside_the_reference(tmp_path, launcher):
    text = (FIXTURES.parent.parent / "exercises" / "autocast.yaml").read_text()
    # no examples or lesson mutants to grade: the reference and starter say it
    text = text[: min(text.index(k) for k in ("\nexamples:", "\nmutants:") if k in text)] + "\n"
    text = text.replace(
        "      loss.backward()\n      optimizer.step()\n      return loss\nbaseline:",
        "      loss.backward()\n      raise ValueError('the reference breaks here')\nbaseline:",
        1,
    )
    path = tmp_path / "autocast.yaml"
    path.write_text(text)
    report = validate_file(path, device="cpu", launcher=launcher, with_mutants=False)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "the reference breaks here" in ln)
    # the coverage check makes the reference a trusted run too: its error is the lesson's, at the line that raised
    said = [p for p in report.problems if p.startswith(f"{path}:{line}: ")]
    assert said and "reference solution" in said[0] and "the reference breaks here" in said[0], report.problems


def test_a_misspelt_field_does_not_hide_the_rest_of_its_section(tmp_path):
    """A misspelt name in workload.amp used to make the whole workload unknown: its setup's errors, the rules
    that read workload.steps and the warnings came only in a later round."""
    text = (FIXTURES.parent.parent / "exercises" / "lr_scheduler_skips.yaml").read_text()
    for old, new in (
        ("growth_interval: 2}", "growth_intervall: 2}"),
        ("        model = mlp(IN, 256, 256, CLASSES)\n", "        model = mlpp(IN, 256, 256, CLASSES)\n"),
        ("    at_step: [3, 5]\n", "    at_step: [3, 7]\n"),
    ):
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "lr_scheduler_skips.yaml"
    path.write_text(text)
    report = validate_file(path, grade=False)
    line = {k: next(n for n, ln in enumerate(text.splitlines(), 1) if k in ln) for k in ("intervall", "mlpp", "[3, 7]")}
    said = "\n".join(report.problems)
    assert f":{line['intervall']}: workload.amp.growth_intervall: unknown field" in said
    assert f":{line['mlpp']}: workload.setup: " in said and "name 'mlpp' is not defined" in said
    assert f":{line['[3, 7]']}: checks[" in said and "].at_step: 7 leaves no step after it" in said

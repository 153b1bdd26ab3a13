"""The `grader` command as a learner and an instructor use it."""

import json
import re
from pathlib import Path

from click.testing import CliRunner

from conftest import SUBMISSIONS
from grader.cli import main

ROOT = Path(__file__).resolve().parent.parent


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_list_shows_every_lesson_in_the_chosen_language():
    out = invoke("list", "--lang", "it").output
    for exercise_id in ("autocast", "grad_scaler", "grad_accumulation", "reduce_memory"):
        assert exercise_id in out
    assert "Precisione mista" in out


def test_show_prints_lesson_task_and_signature():
    out = invoke("show", "grad_scaler").output
    assert "scaler.unscale_(optimizer)" in out
    assert "def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype)" in out


def test_start_writes_the_starter_and_refuses_to_overwrite(tmp_path):
    target = tmp_path / "mine.py"
    assert invoke("start", "autocast", target).exit_code == 0
    assert "def train_step" in target.read_text()
    again = invoke("start", "autocast", target)
    assert again.exit_code == 2 and "--force" in again.output


def test_unknown_exercise_exits_2_and_lists_known_ones(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("pass\n")
    result = invoke("check", "nope", f)
    assert result.exit_code == 2 and "autocast" in result.output


def test_check_reports_the_mistake_with_its_line_and_exits_1():
    result = invoke("check", "autocast", SUBMISSIONS / "autocast" / "backward_inside_autocast.py", "--device", "cpu")
    assert result.exit_code == 1
    assert "backward_inside_autocast" in result.output and "line 11" in result.output
    assert "loss.backward()" in result.output and "fix:" in result.output


def test_check_json_is_the_result_document(tmp_path):
    ref = tmp_path / "ref.py"
    ref.write_text(_reference("autocast"))
    result = invoke("check", "autocast", ref, "--json", "--device", "cpu")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["status"] == "pass" and doc["score"] == 1.0 and doc["device"] == "cpu"
    assert {c["id"] for c in doc["checks"]} == {"call_order", "parity", "coverage", "speedup"}
    assert len(doc["plots"]["loss"]["submission"]) == len(doc["plots"]["loss"]["baseline"]) == 8


def test_exercism_format_leaves_out_not_applicable_checks(tmp_path):
    ref = tmp_path / "ref.py"
    ref.write_text(_reference("autocast"))
    doc = json.loads(invoke("check", "autocast", ref, "--format", "exercism", "--device", "cpu").output)
    assert doc["version"] == 2 and doc["status"] == "pass"
    assert "speedup" not in {t["name"] for t in doc["tests"]}


def test_prairielearn_format_gives_no_points_for_not_applicable(tmp_path):
    out = tmp_path / "results.json"
    result = invoke("check", "autocast", SUBMISSIONS / "errors" / "prints_forged_result.py", "--format",
                    "prairielearn", "--device", "cpu", "-o", out)
    assert result.exit_code == 1
    doc = json.loads(out.read_text())
    assert doc["gradable"] is True and doc["score"] < 1
    speed = next(t for t in doc["tests"] if t["name"] == "speedup")
    assert speed["max_points"] == 0


def test_validate_schema_only_reports_file_line_and_field(tmp_path):
    bad = tmp_path / "autocast.yaml"
    bad.write_text((ROOT / "exercises" / "autocast.yaml").read_text().replace("min_fraction: 0.9", "min_fraction: 2"))
    result = invoke("validate", "--schema-only", bad)
    assert result.exit_code == 1
    assert f"{bad}:" in result.output and "checks[2].min_fraction" in result.output


def test_validate_grades_reference_and_starter():
    result = invoke("validate", ROOT / "exercises" / "autocast.yaml", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "reference pass" in result.output and "starter fail" in result.output
    assert "autocast: mutation score 100%" in result.output
    assert "killed   lr_doubled" in result.output and "SURVIVED" not in result.output


def _reference(exercise_id):
    from grader.loader import load_exercise

    return load_exercise(exercise_id).reference


def test_sandbox_limits_can_be_changed_from_the_command_line():
    result = invoke("check", "autocast", SUBMISSIONS / "errors" / "hangs.py", "--sandbox", "local",
                    "--limit", "step_timeout_s=3", "--json")
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "timeout" and "within 3 s" in error["message"]


def test_unknown_sandbox_limit_is_a_usage_error():
    result = invoke("check", "autocast", SUBMISSIONS / "errors" / "hangs.py", "--limit", "gpus=2")
    assert result.exit_code == 2 and "unknown sandbox limit 'gpus'" in result.output


def test_list_skips_a_broken_lesson_and_names_it(tmp_path, monkeypatch):
    text = (ROOT / "exercises" / "autocast.yaml").read_text().replace("id: autocast", "id: draft", 1)
    (tmp_path / "draft.yaml").write_text(text.replace("hints:", "hintz:"))
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path))
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0 and "reduce_memory" in result.stdout and "draft" not in result.stdout
    assert f"skipped: {tmp_path / 'draft.yaml'}:" in result.stderr and "hintz" in result.stderr


def test_list_with_a_missing_lesson_folder_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path / "typo"))
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 2 and "typo" in result.output


def test_show_can_print_hints_and_quiz():
    out = invoke("show", "grad_scaler", "--hints", "--quiz").output
    assert "Hints" in out and "1. " in out and "Quiz" in out and "Answers:" in out


def test_new_writes_a_skeleton_that_validates_once_its_todos_are_written(tmp_path):
    assert invoke("new", "my_lesson", "--dir", tmp_path).exit_code == 0
    path = tmp_path / "my_lesson.yaml"
    todo = invoke("validate", "--schema-only", path)
    assert todo.exit_code == 1 and "title.en: still says TODO" in todo.output and "quiz[0]" in todo.output
    path.write_text(path.read_text().replace('"TODO: ', '"Written: ').replace("TODO: ", "Written: "))
    result = invoke("validate", path, "--device", "cpu", "--sandbox", "local", "--no-mutants")
    assert result.exit_code == 0, result.output
    assert "my_lesson: reference pass" in result.output and "starter fail" in result.output
    assert invoke("new", "my_lesson", "--dir", tmp_path).exit_code == 2  # never overwrites


def test_grader_prints_no_warning_that_is_not_the_learners_business():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "grader", "list"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "autocast" in done.stdout
    assert "Warning" not in done.stderr and "NumPy" not in done.stderr, done.stderr


def test_check_report_words_each_figure_against_its_threshold():
    result = invoke("check", "grad_scaler", SUBMISSIONS / "grad_scaler" / "clip_without_unscale.py", "--device", "cpu",
                    "--sandbox", "local")
    assert result.exit_code == 1
    assert re.search(r"update vs FP32 \(worst: \S+\) 100.0%, needs at most 5.00%", result.output)
    assert "matmul FLOPs in 16-bit 100.0%, needs at least 90.0%" in result.output
    assert "threshold: {" not in result.output and "max_loss_rel_diff=" not in result.output

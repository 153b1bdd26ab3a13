"""The `grader` command as a learner and an instructor use it."""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SUBMISSIONS

from grader.cli import main
from grader.lesson.base import localize

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def english_unless_asked(monkeypatch):
    """The commands' language comes from AMP_DOJO_LANG and the locale too: these tests expect English unless they
    ask for another, whatever the shell that runs them speaks."""
    for name in ("AMP_DOJO_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_list_shows_every_lesson_in_the_chosen_language():
    out = invoke("list", "--lang", "it").output
    for exercise_id in ("autocast", "grad_scaler", "grad_accumulation", "reduce_memory"):
        assert exercise_id in out
    assert "Precisione mista" in out


def test_list_aligns_every_title_whatever_the_length_of_its_lesson_id():
    out = invoke("list").output
    lines = out.splitlines()
    titles = {re.match(r"\S+ +", line).end() for line in lines[0::2]}  # where each title begins
    summaries = {len(line) - len(line.lstrip(" ")) for line in lines[1::2]}
    assert "fsdp2_mixed_precision" in out
    assert len(titles) == 1 and titles == summaries, (titles, summaries)


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
    path = SUBMISSIONS / "autocast" / "backward_inside_autocast.py"
    result = invoke("check", "autocast", path, "--device", "cpu")
    assert result.exit_code == 1
    assert f"{path}:11: mistake backward_inside_autocast" in result.output
    assert "  11 |         loss.backward()" in result.output and "fix: dedent the backward call" in result.output


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
    result = invoke(
        "check",
        "autocast",
        SUBMISSIONS / "errors" / "prints_forged_result.py",
        "--format",
        "prairielearn",
        "--device",
        "cpu",
        "-o",
        out,
    )
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
    assert "autocast: generic mutation score 100%" in result.output
    assert "autocast: lesson mutation score 100%" in result.output  # reported apart from the generic ones
    assert "killed   lr_doubled" in result.output and "SURVIVED" not in result.output


def _reference(exercise_id):
    from grader.lesson.loader import load_exercise

    return load_exercise(exercise_id).reference


def test_sandbox_limits_can_be_changed_from_the_command_line():
    result = invoke(
        "check",
        "autocast",
        SUBMISSIONS / "errors" / "hangs.py",
        "--sandbox",
        "local",
        "--limit",
        "step_timeout_s=3",
        "--json",
    )
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


def fresh_env(tmp_path, **extra) -> dict:
    """What a learner's new shell has: no PYTHONWARNINGS, no test settings, a new home."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8", **extra}
    if "ONEDNN_MAX_CPU_ISA" in os.environ:  # the suite's slow kind of CPU
        env["ONEDNN_MAX_CPU_ISA"] = os.environ["ONEDNN_MAX_CPU_ISA"]
    return env


def test_check_prints_nothing_but_the_report_and_its_progress_in_a_fresh_environment(tmp_path):
    """reduce_memory measures memory with the profiler, whose log lines once reached the learner's output."""
    starter = tmp_path / "mine.py"
    assert invoke("start", "reduce_memory", starter).exit_code == 0
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "check",
            "reduce_memory",
            str(starter),
            "--device",
            "cpu",
            "--sandbox",
            "local",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=fresh_env(tmp_path),
    )
    assert done.returncode == 1, done.stderr
    assert all(line.startswith("  .. ") for line in done.stderr.splitlines()), done.stderr
    assert "check memory: FAIL" in done.stderr and "training and comparing with FP32: 7 steps" in done.stderr
    assert "What your code printed" not in done.stdout and "USDT" not in done.stdout, done.stdout
    assert re.search(r"FAIL +Peak memory", done.stdout) and "Warning" not in done.stdout + done.stderr


SYNTAX_ERROR = "def train_step(model:\n"


def test_check_colours_a_terminal_unless_no_color_is_set(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(SYNTAX_ERROR)
    deep = tmp_path / ("a-folder-with-a-long-name-" * 3) / "bad.py"
    deep.parent.mkdir()
    deep.write_text(SYNTAX_ERROR)
    command = [sys.executable, "-m", "grader", "check", "autocast"]
    coloured = on_a_terminal([*command, "bad.py"], fresh_env(tmp_path), tmp_path)
    plain = on_a_terminal([*command, "bad.py"], fresh_env(tmp_path, NO_COLOR="1"), tmp_path)
    long_path = on_a_terminal([*command, str(deep)], fresh_env(tmp_path, NO_COLOR="1"), tmp_path)
    assert "\x1b[1;31mERROR" in coloured and "bad.py:1: " in coloured
    assert not re.search(r"\x1b\[[0-9;]*m", plain)  # no colour or bold; the spinner still moves the cursor
    assert "ERROR  Your code has a syntax error" in plain and "bad.py:1: " in plain
    # a terminal is 80 columns here: a path longer than that folds onto the next line but is never cut off
    assert "…" not in long_path and "bad.py:1: " in re.sub(r"\s*\r?\n\s*", "", long_path)


def on_a_terminal(command: list[str], env: dict, cwd: Path) -> str:
    """Runs `command` with a pseudo-terminal as its stdout and stderr; what it wrote."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env, cwd=cwd)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_is_off_when_piped_and_can_be_forced(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(SYNTAX_ERROR)
    piped = invoke("check", "autocast", bad)
    forced = invoke("check", "autocast", bad, "--color", "always")
    assert piped.exit_code == forced.exit_code == 1
    assert "\x1b" not in piped.stdout and "ERROR  Your code has a syntax error" in piped.stdout
    assert "\x1b[1;31mERROR" in forced.stdout


def test_watch_grades_the_file_again_each_time_it_is_saved(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text(SYNTAX_ERROR)
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "check", "autocast", "mine.py", "--watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=fresh_env(tmp_path, PYTHONUNBUFFERED="1"),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # as a shell's Ctrl+C
    try:
        lines = _lines_of(proc.stdout)
        assert _until(lines, "mine.py:1: SyntaxError")
        edited = tmp_path / "mine.py.new"  # the way many editors save: write a new file, rename it over the old
        edited.write_text("import torch\n\n" + SYNTAX_ERROR)
        edited.replace(mine)
        assert _until(lines, "mine.py:3: SyntaxError"), "the saved file was not graded again"
        mine.write_text("import torch\n\n\n\n" + SYNTAX_ERROR)
        assert _until(lines, "mine.py:5: SyntaxError"), "the file rewritten in place was not graded again"
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1  # the last verdict's
    assert err.count("mine.py changed: grading again") == 2 and "stopped watching mine.py" in err


def _lines_of(stream):
    import queue
    import threading

    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


def _until(lines, text: str, timeout: float = 60) -> bool:
    import queue
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if text in lines.get(timeout=end - time.monotonic()):
                return True
        except queue.Empty:
            break
    return False


def test_hint_shows_one_more_hint_each_time_and_reset_starts_over(tmp_path, monkeypatch):
    from grader.lesson.loader import load_exercise

    monkeypatch.delenv("AMP_DOJO_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    hints = [localize(h) for h in load_exercise("autocast").hints]
    first, second = invoke("hint", "autocast").output, invoke("hint", "autocast").output
    assert "Hint 1 of 3" in first and hints[0] in first and hints[1] not in first
    assert "Hint 2 of 3" in second and hints[0] in second and hints[1] in second and hints[2] not in second
    assert json.loads((tmp_path / "amp-dojo" / "hints.json").read_text()) == {"autocast": 2}
    invoke("hint", "autocast")
    done = invoke("hint", "autocast").output
    assert all(h in done for h in hints) and "All hints shown (3 of 3)" in done and "--reset" in done
    assert "hints of autocast forgotten" in invoke("hint", "autocast", "--reset").output
    again = invoke("hint", "autocast", "--lang", "it").output
    assert "Suggerimento 1 di 3" in again and hints[1] not in again


def test_quiz_gives_a_second_try_then_the_explanation(tmp_path):
    from grader.lesson.loader import load_exercise

    quiz = load_exercise("autocast").quiz
    right = ["abcd"[q.answer] for q in quiz]
    wrong = ["abcd"[(q.answer + 1) % len(q.choices)] for q in quiz]
    # question 1: a typo, a wrong answer, then the right one; question 2: wrong twice; question 3: right at once
    answers = ["z", wrong[0], right[0], wrong[1], wrong[1], right[2]]
    result = CliRunner().invoke(main, ["quiz", "autocast"], input="\n".join(answers) + "\n")
    assert result.exit_code == 0, result.output
    out = result.output
    first, rest = out.split("Think again and try another answer.", 1)
    assert localize(quiz[0].explanation) not in first  # a first wrong answer does not give the answer away
    assert "answer with one of a, b, c, d" in first
    assert f"Right. {localize(quiz[0].explanation)}" in rest
    assert f"Not quite. The answer is {right[1]}). {localize(quiz[1].explanation)}" in rest
    assert f"Right. {localize(quiz[2].explanation)}" in rest
    assert "1 of 3 right at the first try" in out


def test_check_report_words_each_figure_against_its_threshold():
    result = invoke(
        "check",
        "grad_scaler",
        SUBMISSIONS / "grad_scaler" / "clip_without_unscale.py",
        "--device",
        "cpu",
        "--sandbox",
        "local",
    )
    assert result.exit_code == 1
    assert re.search(r"update vs FP32 \(worst: \S+\) 100.0%, needs at most 5.00%", result.output)
    assert "matmul FLOPs in 16-bit 100.0%, needs at least 90.0%" in result.output
    assert "threshold: {" not in result.output and "max_loss_rel_diff=" not in result.output


def test_a_syntax_error_is_answered_without_pytorch_or_a_sandbox(tmp_path):
    """The learner's most common first mistake gets its verdict at once: nothing imports PyTorch or starts a
    sandbox (each costs seconds) for code that cannot run."""
    broken = tmp_path / "broken.py"
    broken.write_text("def train_step(model, optimizer, inputs, targets, device_type, amp_dtype)\n    pass\n")
    probe = (
        "import sys\n"
        f"sys.argv = ['grader', 'check', 'autocast', {str(broken)!r}, '--lang', 'en']\n"
        "from grader.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    print('EXIT', exit.code, 'torch' in sys.modules, 'grader.sandboxes.pool' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "EXIT 1 False False", done.stdout + done.stderr
    assert "broken.py:1: SyntaxError: expected ':'" in done.stdout

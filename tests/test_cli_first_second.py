"""`grader check` speaks at once: on a terminal it names the file and the lesson before it imports anything
heavy, shows each step as it starts (PyTorch's import being the first), and a syntax error is told without
PyTorch or a sandbox. Run in a real pseudo-terminal, as a learner's shell runs it."""

import os
import pty
import re
import resource
import select
import subprocess
import sys
import time

from conftest import ROOT

from grader.cli import early

STARTER_LINE = re.compile(r"grader check: \S+ \(lesson autocast\)")


def in_a_terminal(args, tmp_path, until: str | None = None, timeout: float = 60.0):
    """(seconds to the first output, seconds in all, the output, CPU seconds the command used); `until`: the
    command is stopped once its output holds that text."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "AMP_DOJO_LANG": "en", "COLUMNS": "120"}
    env["AMP_DOJO_CACHE"] = str(tmp_path / "cache")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    master, slave = pty.openpty()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, cwd=ROOT, env=env
    )
    os.close(slave)
    first, out = None, b""
    try:
        while time.perf_counter() - started < timeout:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            first = first if first is not None else time.perf_counter() - started
            out += chunk
            if until and until in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace")):
                break
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))
    return first, time.perf_counter() - started, text, cpu


def imported_before(text: str, marker: str) -> list[str]:
    """The modules whose import ended before `marker` was printed."""
    head = text[: text.index(marker)]
    return re.findall(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", head)


def test_check_names_its_file_and_lesson_at_once_then_shows_loading_pytorch_as_a_step(tmp_path):
    source = ROOT / "tests" / "submissions" / "autocast"
    good = next(p for p in sorted(source.glob("*.py")) if "expect-status: pass" in p.read_text())
    first, _, text, _ = in_a_terminal(
        ["check", "autocast", str(good), "--sandbox", "local"], tmp_path, until="loading PyTorch"
    )
    assert STARTER_LINE.search(text), text[-3000:]
    before = imported_before(text, STARTER_LINE.search(text).group(0))
    assert not {"click", "pydantic", "yaml", "rich", "torch"} & set(before), before
    assert first < 0.5, f"the first output came after {first:.2f} s"
    assert "loading PyTorch" in text, text[-3000:]
    assert "torch" not in imported_before(text, "loading PyTorch")


def test_a_syntax_error_is_told_without_pytorch_or_a_sandbox_in_a_fraction_of_the_time(tmp_path):
    """Bounded in CPU seconds, which the suite's neighbours on the machine do not stretch as they stretch the
    wall clock: the whole command, interpreter included."""
    broken = tmp_path / "broken.py"
    broken.write_text("def train_step(model\n    x = (\n")
    _, _, text, cpu = in_a_terminal(["check", "autocast", str(broken)], tmp_path)
    assert "SyntaxError" in text and "sandbox -" in " ".join(text.split()), text[-3000:]  # a long path wraps it
    assert "torch" not in re.findall(r"\|\s*(\S+)\s*$", text, re.M), "a syntax error imported PyTorch"
    assert cpu < 1.5, f"the command used {cpu:.2f} s of CPU"


def test_check_reads_the_file_once_on_a_syntax_error(tmp_path, monkeypatch):
    from pathlib import Path

    from click.testing import CliRunner

    from grader.cli import main

    broken = tmp_path / "broken.py"
    broken.write_text("def train_step(model\n")
    reads = []
    original = Path.read_text

    def counted(self, *args, **kwargs):
        if self == broken:
            reads.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    result = CliRunner().invoke(main, ["check", "autocast", str(broken)])
    assert result.exit_code == 1 and "SyntaxError" in result.output, result.output
    assert len(reads) == 1, reads


def test_the_first_line_speaks_the_learners_language_and_stays_off_pipes():
    class Terminal:
        def __init__(self, tty=True):
            self.text, self.tty = "", tty

        def isatty(self):
            return self.tty

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    said = Terminal()
    assert early.announce(["grader", "check", "autocast", "a.py", "--lang", "it"], said, {})
    assert said.text == "grader check: a.py (lezione autocast)\n"
    said = Terminal()
    assert early.announce(["grader", "check", "--device", "cpu", "autocast", "a.py"], said, {"LANG": "id_ID.UTF-8"})
    assert "pelajaran autocast" in said.text
    assert not early.announce(["grader", "check", "autocast", "a.py", "--json"], Terminal(), {})
    assert not early.announce(["grader", "check", "autocast", "a.py"], Terminal(tty=False), {})
    assert not early.announce(["grader", "list"], Terminal(), {})

"""The terminal report of a real grading: plain whole lines where the output is
not a terminal, colour only where it is (and never with NO_COLOR), each mistake
at file:line with its source line and fix, and nothing the learner's code
prints can redraw it."""

import io
import re

import pytest
from conftest import SUBMISSIONS

from grader.results import GradingResult
from grader.wording import report

BACKWARD_INSIDE = SUBMISSIONS / "autocast" / "backward_inside_autocast.py"


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(scope="module")
def failing(grade):
    source = BACKWARD_INSIDE.read_text()
    return grade("autocast", source), report.Source("mine.py", source)


def printed(result, src, stream, colour="auto", lang="en") -> str:
    report.print_report(report.console_for(stream, colour), result, src, lang)
    return stream.getvalue()


def test_report_off_a_terminal_is_plain_whole_lines(failing):
    text = printed(*failing, io.StringIO())
    assert "\x1b" not in text
    lines = text.splitlines()
    assert lines[0] == "mine.py: autocast on cpu (bfloat16), sandbox local"
    assert any(re.match(r"FAIL   Call order +backward\(\) was called inside the autocast block", ln) for ln in lines)
    assert "       mine.py:11: mistake backward_inside_autocast" in lines
    assert "           11 |         loss.backward()" in lines
    assert any(ln.startswith("       fix: dedent the backward call") for ln in lines)
    assert (
        "       weights moved from the FP32 run toward a mixed-precision run 100.0%, needs about 100% when the 16-bit "
        "work is real" in lines
    )  # longer than any terminal: one line all the same
    assert lines[-1].startswith("=") and "failed · 1 failed, 2 passed, 1 not applicable · score 67%" in lines[-1]
    assert all(ln == ln.rstrip() for ln in lines), "no padding to a width the output does not have"


def test_colour_marks_each_badge_only_when_wanted(failing, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    assert "\x1b[1;31mFAIL" in printed(*failing, io.StringIO(), "always")
    assert "\x1b[1;32mPASS" in printed(*failing, Terminal())
    assert "\x1b" not in printed(*failing, Terminal(), "never")
    monkeypatch.setenv("NO_COLOR", "1")
    on_terminal = printed(*failing, Terminal())
    assert "\x1b[" not in on_terminal and "FAIL" in on_terminal


def test_report_speaks_the_chosen_language_from_the_message_catalog(failing):
    from grader.wording.catalog import render

    text = printed(*failing, io.StringIO(), lang="it")
    assert re.search("NO      Ordine delle chiamate +" + re.escape(render("backward_inside_autocast", {}, "it")), text)
    assert "come correggere: " + render("backward_inside_autocast.fix", {}, "it") in text
    assert "loss rispetto a FP32 " in text
    assert "non superato · 1 non superato, 2 superati, 1 non applicabile · punteggio 67%" in text


@pytest.mark.parametrize("lang", ["it", "id"])
def test_report_writes_its_figures_and_counts_as_the_language_does(failing, lang):
    from grader.wording.catalog import render

    result, src = failing
    text = " ".join(printed(result, src, io.StringIO(), lang=lang).split())
    took = f"{result.duration_s:.1f}".replace(".", ",")
    assert render("report.took", {"seconds": took}, lang) in text  # "20,3 s": a decimal comma
    assert re.search(r"\d,\d+%", text) and not re.search(r"\d\.\d+%", text)  # the figures: 0,13%, never 0.13%
    counts = render("report.count.fail", {"n": 1}, lang) + ", " + render("report.count.pass", {"n": 2}, lang)
    assert counts in text


def test_what_the_code_prints_cannot_redraw_the_report(failing):
    result, src = failing
    forged = GradingResult(**{**result.__dict__, "output": "\x1b[2J\x1b[HPASS score 100%\x07 and more"})
    text = printed(forged, src, Terminal(), "always")
    assert "\x1b[2J" not in text and "\x07" not in text
    assert "\\x1b[2J\\x1b[HPASS score 100%\\x07 and more" in text


def test_a_nonfinite_loss_is_reported_at_the_line_that_caused_it(grade):
    # the unscale_ before the last micro-batch's backward: the error carries its line and source line, which the
    # report (and the web result) show as any error's
    source = (SUBMISSIONS / "grad_accumulation" / "clipped_before_the_last_micro_batch.py").read_text()
    result = grade("grad_accumulation", source)
    assert (result.error.kind, result.error.line) == ("nonfinite", 25)
    assert result.error.source_line == "scaler.unscale_(optimizer)"
    assert result.to_dict()["error"]["line"] == 25
    text = printed(result, report.Source("mine.py", source), io.StringIO())
    assert "mine.py:25: the loss became nan at step" in text and "25 | scaler.unscale_(optimizer)" in text


def test_a_nonfinite_loss_is_given_no_line_its_calls_do_not_show():
    from grader.judge.evaluate import submission_error

    code = "def train_step(model, x):\n    loss = model(x)\n    loss.backward()\n    return loss\n"
    nan = {"kind": "nonfinite", "message": "the loss became nan at step 2", "step": 2}
    backward = {"ev": "backward", "line": 3, "value": float("nan")}
    error = submission_error({**nan, "events": [backward]}, code)
    assert (error.line, error.source_line) == (3, "loss.backward()")
    finite = {**backward, "value": 1.5}  # its backward's loss was finite: the NaN came after it, no line is guessed
    assert submission_error({**nan, "events": [finite]}, code).line is None
    assert submission_error(nan, code, [{"step": 1, "events": [backward]}]).line is None  # another step's backward

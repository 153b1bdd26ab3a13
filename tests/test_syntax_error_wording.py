"""A syntax error is worded as one: the code never ran, so no "stopped before the end"; the whole offending line
is shown, indentation and all, with a caret under the column where Python stopped reading; the result document
carries that column for the web page, and a worker's report of a compile-time error keeps it too."""

import pytest

from grader import runner
from grader.judge import protocol
from grader.lesson.loader import load_exercise
from grader.results import CheckResult, GradingResult, SubmissionError
from grader.wording import report

MISSING_COLON = (
    "import torch\n\n\ndef train_step(model, optimizer, inputs, targets, device_type, amp_dtype)\n    pass\n"
)
LONG = "def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):\n" + (
    "    loss = model(inputs).float().sum() + " + " + ".join(f"extra_term_{i}" for i in range(30)) + " +\n"
)


@pytest.fixture(scope="module")
def autocast():
    return load_exercise("autocast")


def test_a_missing_colon_reads_as_a_syntax_error_with_a_caret_after_the_line(autocast):
    result = runner.run(autocast, MISSING_COLON, device="cpu")
    text = report.plain_text(result, report.Source("mine.py", MISSING_COLON))
    lines = text.splitlines()
    at = lines.index("ERROR  Your code has a syntax error and did not run")
    code = " " * 12 + "4 | def train_step(model, optimizer, inputs, targets, device_type, amp_dtype)"
    assert lines[at + 1 : at + 4] == ["       mine.py:4: SyntaxError: expected ':'", code, " " * len(code) + "^"]
    assert "syntax error: your code did not run · score 0% · grading took" in lines[-1]
    assert "stopped before the end" not in text


def test_a_long_line_is_shown_whole_and_the_caret_sits_under_its_column(autocast):
    result = runner.run(autocast, LONG, device="cpu")
    error = result.to_dict()["error"]
    assert error["kind"] == "syntax" and error["source_line"] == LONG.splitlines()[1]
    assert 40 < error["column"] <= len(LONG.splitlines()[1]) + 1  # far past where a clipped line would end
    lines = report.plain_text(result, report.Source("mine.py", LONG), "id").splitlines()
    code = next(ln for ln in lines if ln.lstrip().startswith("2 | "))
    assert code.endswith(LONG.splitlines()[1].rstrip())  # nothing clipped
    caret = lines[lines.index(code) + 1]
    assert caret.rstrip().endswith("^") and len(caret) == len(code) - len(LONG.splitlines()[1]) + error["column"]
    assert "galat sintaksis: kode Anda tidak dijalankan" in lines[-1] and lines[lines.index(code) - 2].startswith(
        "GALAT "
    )


def test_an_unexpected_indent_keeps_the_indentation_it_is_about(autocast):
    source = "x = 1\n    y = 2\n"
    result = runner.run(autocast, source, device="cpu")
    assert result.error.source_line == "    y = 2" and result.error.column == 4  # Python's own offset
    lines = report.plain_text(result, report.Source("mine.py", source), "it").splitlines()
    at = lines.index(" " * 13 + "2 |     y = 2")
    assert lines[at + 1] == " " * len(" " * 13 + "2 |    ") + "^"


def test_a_tab_before_the_error_stays_a_tab_under_it(autocast):
    source = "def train_step(model):\n\tx = (1 +\n"
    result = runner.run(autocast, source, device="cpu")
    caret = report.Source("mine.py", source).caret(result.error.line, result.error.source_line, result.error.column)
    assert caret is not None and "\t" in caret.plain and caret.plain.endswith("^")


def test_the_notebook_shows_the_line_and_a_caret(autocast):
    from amp_dojo.html import grading_html

    result = runner.run(autocast, MISSING_COLON, device="cpu")
    page = grading_html(result, MISSING_COLON, "it")
    assert "Il tuo codice contiene un errore di sintassi e non è stato eseguito" in page
    assert "def train_step(model, optimizer, inputs, targets, device_type, amp_dtype)\n" in page
    assert 'class="caret"' in page and "il tuo codice si è fermato" not in page


def test_a_compile_time_syntax_error_from_the_worker_keeps_the_whole_line_and_a_bounded_column():
    code = "def f():\n    pass\n\n        return 3\n"
    reported = {"kind": "syntax", "message": "SyntaxError: 'return' outside function", "line": 4, "column": 9}
    out = protocol.bounded_error(reported, code, 10)
    assert out["source_line"] == "        return 3" and out["column"] == 9
    assert protocol.bounded_error({**reported, "column": 10**9}, code, 10)["column"] is None
    assert protocol.bounded_error({**reported, "column": "x"}, code, 10)["column"] is None
    other = protocol.bounded_error({**reported, "kind": "exception"}, code, 10)
    assert other["source_line"] == "return 3" and other["column"] is None  # other errors as before


def test_checks_are_named_in_the_report_and_keep_their_ids_in_the_document():
    result = GradingResult("autocast", "cpu", "bfloat16", sandbox="local")
    result.checks = [
        CheckResult("call_order", "pass", "every call in its place"),
        CheckResult("scaler_choice", "fail", "no scaler was chosen"),
    ]
    src = report.Source("mine.py", "pass\n")
    it = report.plain_text(result, src, "it")
    assert "Ordine delle chiamate" in it and "call_order" not in it
    en = report.plain_text(result, src, "en")
    assert "Call order" in en and "scaler_choice" in en  # a lesson's own check without its title: its id
    buffer = __import__("io").StringIO()
    report.print_report(report.console_for(buffer, "never"), result, src, "id", titles={"scaler_choice": "Pilihan"})
    assert "Urutan panggilan" in buffer.getvalue() and "Pilihan" in buffer.getvalue()
    assert [c["id"] for c in result.to_dict()["checks"]] == ["call_order", "scaler_choice"]


def test_the_summary_names_the_grading_time_and_the_whole_commands_when_it_has_both():
    result = GradingResult("autocast", "cpu", "bfloat16", error=SubmissionError("timeout", "too long"), duration_s=0.6)
    src = report.Source("mine.py", "pass\n")
    assert report.plain_text(result, src).splitlines()[-1].count("grading took 0.6 s") == 1
    buffer = __import__("io").StringIO()
    report.print_report(report.console_for(buffer, "never"), result, src, "en", wall_s=2.94)
    assert "grading took 0.6 s, the whole command 2.9 s" in buffer.getvalue()

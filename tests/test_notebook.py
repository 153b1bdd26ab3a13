"""The Jupyter extension in a real notebook: nbclient runs it on an ipykernel,
`%%grade` cells are graded in the sandbox (never run by the kernel), and the
saved notebook's outputs hold the verdict as HTML with the loss chart."""

import html as html_lib
import re

import nbformat
import pytest
from nbclient import NotebookClient

from grader.lesson.loader import load_exercise
from grader.results import CheckResult, Finding, GradingResult, SubmissionError
from grader.sandboxes.kinds import make_launcher


def _html(cell) -> str:
    [out] = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
    return out.data["text/html"]


@pytest.mark.slow
def test_a_notebook_grades_its_cells_in_the_sandbox_and_saves_the_verdicts(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    ex = load_exercise("autocast")
    cell = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(
        cells=[
            cell("%load_ext amp_dojo"),
            cell("%grade_show autocast"),
            cell("%%grade autocast --device cpu\n" + ex.starter),
            cell("%%grade autocast --device cpu\n" + ex.reference + "\nKERNEL_RAN_IT = True\n"),
            cell("'train_step' in globals() or 'KERNEL_RAN_IT' in globals()"),
            cell("%grade_show autocast --lang it"),
            cell("%%grade autocast --device cpu --lang it\n" + ex.starter),
        ]
    )
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    saved = tmp_path / "lesson.ipynb"
    nbformat.write(nb, saved)
    nb = nbformat.read(saved, as_version=4)

    shown = nb.cells[1].outputs[0].data["text/markdown"]
    assert shown.startswith("# ") and ex.starter.strip() in shown and "%%grade autocast" in shown

    sandbox = make_launcher("auto").name  # the CLI's choice here
    starter, reference = _html(nb.cells[2]), _html(nb.cells[3])
    assert 'data-status="fail"' in starter and 'data-finding="no_autocast"' in starter
    assert f"sandbox {sandbox}" in starter and "fix:" in starter
    assert 'data-status="pass"' in reference and "data-finding" not in reference
    for html in (starter, reference):
        svg = re.search(r"<svg .*?</svg>", html).group(0)
        assert svg.count("<polyline") == 2 and "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "<script" not in html
    assert not [o for c in nb.cells for o in c.outputs if o.output_type in ("stream", "error")]  # no warning
    assert "FAIL" in nb.cells[2].outputs[0].data["text/plain"]  # the plain report for text-only frontends
    assert nb.cells[4].outputs[0].data["text/plain"] == "False", "the kernel ran a graded cell"
    italian = nb.cells[5].outputs[0].data["text/markdown"]
    assert ex.starter_in("it").strip() in italian and "# TODO: esegui il forward pass" in italian
    graded_in_italian = _html(nb.cells[6])
    assert 'data-status="fail"' in graded_in_italian and "come correggere:" in graded_in_italian
    _assert_decimal_commas(graded_in_italian)


def _text_of(html: str) -> str:
    """What a reader sees of the verdict: its text, without the markup (whose coordinates and styles hold dots)."""
    return html_lib.unescape(re.sub(r"<[^>]+>", " ", html))


def _assert_decimal_commas(html: str) -> None:
    """Every figure with decimals in the verdict's text is written with a decimal comma, and there are some."""
    figures = re.findall(r"(?<![\w.,])\d+[.,]\d+(?![\w.,])", _text_of(html))
    assert figures and all("." not in f for f in figures), figures


def test_the_verdict_writes_its_figures_with_the_learners_decimal_symbol():
    """In Italian every number the report shows has a decimal comma: the checks' messages and measured rows, a
    size, the loss chart's axis and the summary's time."""
    from amp_dojo.html import grading_html
    from grader.wording.catalog import say
    from grader.wording.phrases import amount

    result = GradingResult("autocast", "cpu", "bfloat16", sandbox="bwrap", duration_s=2.46)
    result.checks = [
        CheckResult(
            "parity",
            "pass",
            say("parity.pass", steps=8, loss=0.0123, update=0.0456),
            {"max_loss_rel_diff": 0.0123, "at_step": 3, "max_update_rel_diff": 0.0456},
            {"loss_rtol": 0.02, "update_rtol": 0.05},
        ),
        CheckResult(
            "memory",
            "pass",
            say("memory.pass", peak=amount(3.5 * 2**20), ratio=0.55, base=amount(6.4 * 2**20), limit=0.9),
            {"peak_bytes": int(3.5 * 2**20), "ratio": 0.55, "retained_bytes_per_step": [0, 0]},
            {"max_ratio": 0.9, "max_retained_bytes_per_step": 4096},
        ),
    ]
    result.plots = {"loss": {"submission": [2.31, 2.27, 2.2, 2.16], "baseline": [2.31, 2.26, 2.21, 2.15]}}

    english, italian = _text_of(grading_html(result, "")), grading_html(result, "", "it")
    assert "3.5 MiB" in english and "2.5 s" in english and re.search(r"\b2\.2\b", english)  # a tick of the axis
    _assert_decimal_commas(italian)
    text = _text_of(italian)
    assert "3,5 MiB" in text and "6,4 MiB" in text and "2,5 s" in text and "1,23%" in text
    assert re.search(r"\b2,2\b", text), text  # the loss axis


def test_the_verdict_html_escapes_what_the_code_controls_and_numbers_lines_of_the_cell():
    from amp_dojo.html import grading_html

    source = "import torch\n\ndef train_step(model):\n    raise ValueError('<img src=x onerror=alert(1)>')\n"
    result = GradingResult("autocast", "cpu", "bfloat16", sandbox="bwrap", output="<script>alert(1)</script>\n")
    result.error = SubmissionError(
        "exception",
        "line 4: ValueError: <img src=x onerror=alert(1)>",
        4,
        "    raise ValueError('<img src=x onerror=alert(1)>')",
    )
    result.checks = [
        CheckResult(
            "call_order",
            "fail",
            "the `scaler` module <b>x</b> was skipped",
            findings=[
                Finding(
                    "no_autocast", "no autocast in <i>model.fc</i>", "wrap it in `with torch.autocast(...)`", line=3
                )
            ],
        )
    ]
    html = grading_html(result, source)
    for raw in ("<script>", "<img", "<b>x", "<i>model"):
        assert raw not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "cell line 5" in html and "cell line 4" in html  # the cell's first line is %%grade
    assert "   4 | </span>def train_step(model):" in html
    assert "<code>with torch.autocast(...)</code>" in html and "<code>scaler</code>" in html

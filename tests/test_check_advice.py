"""A lesson's `advice` for a built-in check replaces the fix of that check's findings when it fails (parity
keeps it in its message), in the learner's language."""

from conftest import ROOT

from grader import runner
from grader.checks.advice import advised
from grader.lesson.check_specs import MemoryCheck
from grader.lesson.loader import parse_exercise
from grader.results import CheckResult, Finding
from grader.wording.phrases import localized

ADVICE = (
    "    advice:\n"
    '      en: "In this lesson: keep backward() after the with block."\n'
    '      it: "In questa lezione: backward() dopo il blocco with."\n'
)


def test_the_lessons_advice_replaces_the_fix_of_a_failed_checks_findings(launcher, tmp_path):
    target = tmp_path / "autocast.yaml"
    text = (ROOT / "exercises" / "autocast.yaml").read_text()
    target.write_text(
        text.replace("    autocast: true\n    scaler: false\n", "    autocast: true\n    scaler: false\n" + ADVICE)
    )
    exercise, problems = parse_exercise(target)
    assert not problems, problems
    code = next(e.code for e in exercise.examples if e.name == "backward_inside_autocast")
    result = runner.run(exercise, code, device="cpu", launcher=launcher)
    found = result.check("call_order").findings
    assert [f.id for f in found] == ["backward_inside_autocast"]
    assert found[0].fix == "In this lesson: keep backward() after the with block."
    assert "backward" in found[0].message  # the diagnosis is the grader's own
    italian = localized(result.to_dict(), "it")
    fix = next(f for c in italian["checks"] for f in c["findings"])["fix"]
    assert fix == "In questa lezione: backward() dopo il blocco with."
    assert result.check("parity").status == "pass"  # a check that passed is left alone


def test_a_failure_without_findings_shows_the_advice_after_its_message():
    spec = MemoryCheck(id="memory", max_ratio={"cpu": 0.8}, advice="Free the activations you keep.")
    failed = CheckResult("memory", "fail", "the peak was 95% of FP32's")
    out = advised(spec, failed)
    assert out.message == "the peak was 95% of FP32's Free the activations you keep."
    assert out.parts[-1]["params"]["text"] == {"en": "Free the activations you keep."}


def test_info_findings_and_checks_without_advice_keep_their_wording():
    info = Finding("deprecated_api", "an old spelling", "use torch.amp", severity="info")
    failed = CheckResult("memory", "fail", "too much", findings=[info])
    assert advised(MemoryCheck(id="memory", max_ratio={"cpu": 0.8}), failed) is failed
    out = advised(MemoryCheck(id="memory", max_ratio={"cpu": 0.8}, advice="less"), failed)
    assert out.findings[0].fix == "use torch.amp" and out.message.endswith(" less")


def test_advice_on_a_line_a_failure_names_is_left_out_so_the_mistake_is_said_once():
    """torch.compile in every step: the lesson's compiled check fails at line 10, call_order's advice about the same
    call was said again in its passed row and in the notes. Advice elsewhere, or on no line, stays."""
    from grader.results import advice_said_once, finding

    failing = CheckResult(
        "compiled",
        "fail",
        "compiled in every step",
        findings=[Finding("compile_inside_step", "in every step", "compile once", 10)],
    )
    advice = finding("compile_every_step", 10, severity="info", steps=8)
    elsewhere = finding("compile_every_step", 14, severity="info", steps=8)
    lineless = finding("graph_breaks", None, severity="info", n=1)
    call_order = CheckResult("call_order", "pass", "ok", findings=[advice, elsewhere, lineless])
    advice_said_once([call_order, failing])
    assert call_order.findings == [elsewhere, lineless]
    assert [f.id for f in failing.findings] == ["compile_inside_step"]

"""End to end, in a real browser: a learner opens the lesson list, opens the
autocast lesson, replaces the starter code in the CodeMirror editor, runs it, and
reads the live progress and the graded results, against the real app (web
server + grading worker subprocesses, bubblewrap sandbox, CPU).

Screenshots go to artifacts/screenshots/. Each test uses its own browser context
(its own anonymous learner), so the tests do not depend on each other's order or
on running in the same pytest-xdist worker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.lesson.loader import load_all

from .amp_dojo_live import CHROMIUM, REQUIRE_BROWSER

if not Path(CHROMIUM).exists() and not REQUIRE_BROWSER:
    pytest.skip(
        f"no Chromium at {CHROMIUM} (set AMP_DOJO_REQUIRE_BROWSER=1 to make this a failure)", allow_module_level=True
    )

from playwright.sync_api import expect

from grader.lesson.loader import load_exercise

ROOT = Path(__file__).resolve().parents[2]
LESSON = "autocast"
GRADING_TIMEOUT_MS = int(float(os.environ.get("AMP_DOJO_E2E_GRADING_TIMEOUT_S", "90")) * 1000)
WRONG_SOLUTION = ROOT / "tests" / "submissions" / "autocast" / "backward_inside_autocast.py"
# The svg itself carries data-testid="chart" (webapp/frontend/src/charts.js); accept an svg inside one too.
CHART_SVG = 'svg[data-testid="chart"], [data-testid="chart"] svg'


@pytest.fixture(scope="module")
def exercise():
    return load_exercise(LESSON)


def editor_text(page) -> str:
    """The editor's document as the learner sees it, one .cm-line per line."""
    return "\n".join(page.locator('[data-testid="editor"] .cm-line').all_text_contents())


def replace_editor_text(page, code: str) -> None:
    """Focus the editor, select all, and insert the text in one input event
    (typing it key by key would fight auto-indent and bracket closing)."""
    page.locator('[data-testid="editor"] .cm-content').click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)
    assert editor_text(page) == code, editor_text(page)


def submit(page, how: str) -> dict:
    """Runs the editor's code (Ctrl+Enter in the editor, or the Run button) and
    returns the accepted submission (the API's 202 body)."""
    record_status_texts(page)

    def is_submit(response):
        return response.request.method == "POST" and response.url.endswith(f"/api/lessons/{LESSON}/submissions")

    with page.expect_response(is_submit) as info:
        if how == "keyboard":
            page.locator('[data-testid="editor"] .cm-content').press("Control+Enter")
        else:
            page.get_by_test_id("run-button").click()
    response = info.value
    assert response.status == 202, response.text()
    return response.json()


def record_status_texts(page) -> None:
    """From now on, every text the results status line shows is kept in window.__statusTexts."""
    page.evaluate("""() => {
        window.__statusTexts = [];
        const status = document.querySelector('[data-testid="status"]');
        new MutationObserver(() => window.__statusTexts.push(status.textContent))
            .observe(status, {childList: true, characterData: true, subtree: true});
    }""")


def wait_for_result(page, expected: str) -> None:
    """Waits for the verdict, then checks that progress was shown live on the way."""
    results = page.get_by_test_id("results")
    # Live progress: the steps list appears while grading (and stays after it).
    expect(results.get_by_test_id("progress")).to_be_visible(timeout=GRADING_TIMEOUT_MS)
    badge = page.get_by_test_id("result-status")
    expect(badge).to_have_attribute("data-status", expected, timeout=GRADING_TIMEOUT_MS)
    steps = results.locator('[data-testid="progress"] li')
    step_keys = [steps.nth(i).get_attribute("data-step") for i in range(steps.count())]
    assert "started" in step_keys, step_keys
    assert any(k.startswith("check:") for k in step_keys), step_keys
    expect(page.get_by_test_id("run-button")).to_be_enabled()
    texts = page.evaluate("window.__statusTexts")
    assert any(t.startswith("Grading:") for t in texts[:-1]), texts  # live, before the verdict


def check_statuses(page) -> dict:
    rows = page.get_by_test_id("check-row")
    return {
        rows.nth(i).get_attribute("data-check-id"): rows.nth(i).get_attribute("data-status")
        for i in range(rows.count())
    }


def lesson_card(page):
    return page.locator(f'[data-testid="lesson-card"][data-lesson-id="{LESSON}"]')


def open_lesson(page, exercise) -> None:
    page.goto("/")
    cards = page.get_by_test_id("lesson-card")
    expect(cards).to_have_count(len(load_all()))
    expect(lesson_card(page)).to_have_attribute("data-progress", "not_started")
    lesson_card(page).get_by_role("link").click()
    page.wait_for_url(f"**/lessons/{LESSON}")
    expect(page.get_by_test_id("editor")).to_be_visible()
    assert editor_text(page) == exercise.starter, editor_text(page)


def test_reference_solution_passes_with_live_progress_and_loss_chart(page, exercise, js_errors, screenshot):
    page.goto("/")
    expect(page.get_by_test_id("lesson-card")).to_have_count(len(load_all()))
    expect(lesson_card(page)).to_contain_text("autocast")
    screenshot(page, "01-lesson-list", full_page=True)

    open_lesson(page, exercise)
    expect(page.get_by_test_id("status")).to_have_text("Press Run to grade your code.")
    screenshot(page, "02-lesson-editor")

    replace_editor_text(page, exercise.reference)
    accepted = submit(page, "keyboard")
    wait_for_result(page, "pass")

    # What was graded is exactly what was put in the editor.
    stored = page.request.get(accepted["urls"]["self"]).json()
    assert stored["code"] == exercise.reference
    assert stored["status"] == "done" and stored["result_status"] == "pass"

    expect(page.get_by_test_id("result-status")).to_have_text("Passed")
    checks = check_statuses(page)
    assert checks.get("call_order") == "pass" and checks.get("parity") == "pass", checks
    assert set(checks.values()) <= {"pass", "not_applicable"}, checks  # speedup: n/a on CPU
    charts = page.locator(CHART_SVG)
    expect(charts.first).to_be_visible()
    loss = page.locator('svg[data-testid="chart"][data-chart-title^="Loss"]')
    expect(loss).to_have_count(1)
    assert loss.locator("path").count() >= 2, "the loss chart should draw both series"
    expect(page.get_by_test_id("history").locator("a")).to_have_count(1)
    page.get_by_test_id("result-status").scroll_into_view_if_needed()
    screenshot(page, "03a-passed-checks")
    loss.scroll_into_view_if_needed()
    screenshot(page, "03b-passed-loss-chart")

    # The submission's permalink shows the same verdict, from the stored result.
    page.get_by_test_id("history").locator("a").click()
    page.wait_for_url(f"**/submissions/{accepted['id']}")
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "pass")
    expect(page.locator(CHART_SVG).first).to_be_attached()

    page.goto("/")
    expect(lesson_card(page)).to_have_attribute("data-progress", "passed")
    expect(lesson_card(page).get_by_test_id("progress")).to_have_text("Passed")

    assert not js_errors, js_errors


def test_backward_inside_autocast_fails_with_its_diagnostic(page, exercise, js_errors, screenshot):
    open_lesson(page, exercise)
    wrong = WRONG_SOLUTION.read_text()
    replace_editor_text(page, wrong)
    submit(page, "button")
    wait_for_result(page, "fail")

    expect(page.get_by_test_id("result-status")).to_have_text("Failed")
    assert check_statuses(page).get("call_order") == "fail", check_statuses(page)
    row = page.locator('[data-testid="check-row"][data-check-id="call_order"]')
    finding = row.locator('[data-finding-id="backward_inside_autocast"]')
    expect(finding).to_be_visible()
    expect(finding).to_contain_text("backward() was called inside the autocast block")
    expect(finding).to_contain_text("dedent the backward call")
    finding.scroll_into_view_if_needed()
    screenshot(page, "04-failed-diagnostic")

    page.goto("/")
    expect(lesson_card(page)).to_have_attribute("data-progress", "attempted")
    expect(lesson_card(page).get_by_test_id("progress")).to_have_text("Attempted")

    assert not js_errors, js_errors


def test_hints_unfold_one_at_a_time_and_quiz_answers_come_from_the_server(page, exercise, js_errors):
    open_lesson(page, exercise)
    hints = page.locator(".hint-list .hint")
    expect(hints).to_have_count(len(exercise.hints))
    button = page.get_by_test_id("hint-button")
    for shown in range(1, len(exercise.hints) + 1):
        button.click()
        expect(page.locator(".hint-list .hint:visible")).to_have_count(shown)
    expect(button).to_be_disabled()

    question = exercise.quiz[0]
    wrong = next(i for i in range(len(question.choices)) if i != question.answer)
    choices = page.locator('[data-testid="quiz-choice"][data-question="0"]')
    feedback = page.locator('.quiz-question[data-index="0"] [data-testid="quiz-feedback"]')
    choices.nth(wrong).click()
    expect(feedback).to_contain_text("Not quite.")
    expect(feedback).to_contain_text("try another answer")  # no explanation yet: the learner may retry
    choices.nth(question.answer).click()
    expect(feedback).to_contain_text("Right.")
    expect(choices.nth(question.answer)).to_have_attribute("aria-pressed", "true")

    assert not js_errors, js_errors


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_a_reload_during_grading_reattaches_and_shows_the_verdict(viewport_page, exercise, js_errors, viewport):
    from .conftest import DESKTOP, PHONE

    page = viewport_page(DESKTOP if viewport == "desktop" else PHONE)
    open_lesson(page, exercise)
    replace_editor_text(page, exercise.reference)
    submit(page, "button")
    page.reload()  # the grading goes on in the worker; the page must find it again
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "pass", timeout=GRADING_TIMEOUT_MS)
    expect(page.get_by_test_id("run-button")).to_be_enabled()
    history = page.get_by_test_id("history").locator(".badge")
    expect(history.first).to_have_text("Passed")  # not left at "Running"
    page.reload()  # and the last verdict is there on a later visit too, without clicking anything
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "pass")
    assert not js_errors, js_errors


def test_grading_shows_the_elapsed_seconds_while_it_runs(page, exercise, js_errors):
    open_lesson(page, exercise)
    replace_editor_text(page, exercise.reference)
    submit(page, "button")
    wait_for_result(page, "pass")
    texts = page.evaluate("window.__statusTexts")
    import re

    assert any(re.match(r"^Grading: .*\(\d+ s( of at most \d+ s)?\)$", t) for t in texts), texts
    assert not any("fp32" in t for t in texts), texts  # FP32 keeps its capitals
    assert not js_errors, js_errors


def test_the_phone_layout_has_no_sideways_scroll_and_puts_the_task_before_the_editor(
    browser, live_app, exercise, screenshot
):
    context = browser.new_context(
        base_url=live_app.url, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        page.goto(f"/lessons/{LESSON}")
        expect(page.get_by_test_id("editor")).to_be_visible()
        # The learner reads what to do first: the title at the top, the task under it, then the editor.
        title_top = page.locator("#lesson-title").bounding_box()["y"]
        task = page.locator(".task").bounding_box()
        editor_top = page.get_by_test_id("editor").bounding_box()["y"]
        assert title_top < 250, f"the title starts {title_top:.0f} px down the page"
        assert title_top < task["y"] and task["y"] + task["height"] <= editor_top, (title_top, task, editor_top)
        replace_editor_text(page, WRONG_SOLUTION.read_text())
        submit(page, "button")
        expect(page.get_by_test_id("result-status")).to_have_attribute(
            "data-status", "fail", timeout=GRADING_TIMEOUT_MS
        )
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
        table = page.locator(".checks").bounding_box()
        assert table["x"] + table["width"] <= 390, table
        page.get_by_test_id("result-status").scroll_into_view_if_needed()
        screenshot(page, "10-phone-results")
        assert page.locator("#run-button kbd").first.is_hidden()
    finally:
        context.close()


def english_left(text: str, lang: str) -> list[str]:
    """English interface strings (webapp catalog) and English fragments of the grader's messages (grader
    catalog, split at their parameters) that still stand in `text`, a page shown in `lang`."""
    import json as jsonlib
    import re

    from grader.wording.catalog import EN
    from grader.wording.catalog import catalog as grader_catalog

    ui = jsonlib.loads((ROOT / "webapp" / "translations" / f"{lang}.json").read_text(encoding="utf-8"))
    left = [e for e, t in ui.items() if " " in e and e != t and not re.search(r"\{\w+\}", e) and e in text]
    translated = grader_catalog(lang)

    def forms(entry) -> list[str]:  # a plural entry is a dict by CLDR category
        return list(entry.values()) if isinstance(entry, dict) else [entry]

    for key, english in EN.items():
        theirs = " ".join(forms(translated[key])).replace("`", "")
        for fragment in re.split(r"\{[^}]*\}", " ".join(forms(english)).replace("`", "")):
            fragment = fragment.strip(" :;,.()")
            if len(fragment.split()) >= 3 and fragment not in theirs and fragment in text:
                left.append(f"{key}: {fragment}")
    return left


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["it", "id"])
def test_the_results_page_shows_no_english_in_another_language(
    viewport_page, exercise, js_errors, screenshot, lang, viewport
):
    """The interface and every grader message, fix and figure in the learner's language."""
    import json as jsonlib
    import re

    from .conftest import DESKTOP, PHONE

    ui = jsonlib.loads((ROOT / "webapp" / "translations" / f"{lang}.json").read_text(encoding="utf-8"))
    page = viewport_page(DESKTOP if viewport == "desktop" else PHONE)
    page.goto(f"/lessons/{LESSON}")
    page.locator(f'.lang-switch button[value="{lang}"]').click()
    page.wait_for_url(f"**/lessons/{LESSON}")
    expect(page.locator("html")).to_have_attribute("lang", lang)
    replace_editor_text(page, WRONG_SOLUTION.read_text())
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "fail", timeout=GRADING_TIMEOUT_MS)
    finding = page.locator('[data-finding-id="backward_inside_autocast"]')
    expect(finding).to_be_visible()
    text = " ".join(page.locator("body").inner_text().split())
    assert not english_left(text, lang), english_left(text, lang)
    assert ui["Your task"] in text and ui["Failed: see the checks below"] in text
    assert re.search(r"\d,\d+%", text) and not re.search(r"\d\.\d+%", text)  # figures with a decimal comma
    from grader.wording.catalog import render

    assert render("backward_inside_autocast.fix", {}, lang).replace("`", "") in text  # `code` is shown as code
    if lang == "it":
        page.get_by_test_id("result-status").scroll_into_view_if_needed()
        screenshot(page, f"11-italian-results-{viewport}")
    assert not js_errors, js_errors


ENDLESS_LOOP = """import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    while True:
        pass
"""


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_an_endless_loop_shows_its_time_and_limit_and_can_be_cancelled(
    viewport_page, exercise, js_errors, screenshot, viewport
):
    """The status counts the seconds of the running step against its limit, Cancel stops the grading, and the
    (only) worker is free again at once: the next submission is graded without waiting for the limit."""
    import re
    import time

    from .conftest import DESKTOP, PHONE

    page = viewport_page(DESKTOP if viewport == "desktop" else PHONE)
    page.goto(f"/lessons/{LESSON}")
    replace_editor_text(page, ENDLESS_LOOP)
    submit(page, "button")
    status = page.get_by_test_id("status")
    # at most the step's own limit (60 s), or what is left of the whole grading's budget (grader/judge/budget.py)
    expect(status).to_have_text(re.compile(r"step 1 of \d+.*\(\d+ s of at most \d+ s\)"), timeout=GRADING_TIMEOUT_MS)
    expect(status).to_have_text(re.compile(r"\([2-9] s of at most \d+ s\)"), timeout=10_000)  # it counts
    cancel = page.get_by_test_id("cancel-button")
    expect(cancel).to_be_visible()
    cancel.scroll_into_view_if_needed()
    screenshot(page, f"12-endless-loop-{viewport}")
    cancel.click()
    expect(status).to_have_text(re.compile("^Cancelled"), timeout=5_000)
    expect(cancel).to_be_hidden()
    expect(page.get_by_test_id("run-button")).to_be_enabled()
    expect(page.get_by_test_id("history").locator(".badge").first).to_have_text("Cancelled")

    replace_editor_text(page, exercise.reference)
    started = time.monotonic()
    submit(page, "button")
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "pass", timeout=40_000)
    assert time.monotonic() - started < 40, "the worker was still busy with the cancelled endless loop"
    assert not js_errors, js_errors


def axe_serious_violations(page) -> list[str]:
    """axe-core (the copy bundled by the axe-playwright-python package) over the page as it stands."""
    import axe_playwright_python

    script = Path(axe_playwright_python.__file__).with_name("axe.min.js")
    page.add_script_tag(path=str(script))
    result = page.evaluate("""async () => (await axe.run(document, {
        runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}}))
        .violations.filter(v => v.impact === "serious" || v.impact === "critical")
        .map(v => v.id + ": " + v.help + " @ " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", "))""")
    return result


@pytest.mark.parametrize("viewport", [(1366, 768), (390, 844)], ids=["desktop", "phone"])
def test_lesson_and_results_pages_have_no_serious_accessibility_violations(browser, live_app, exercise, viewport):
    # bypass_csp: the page's CSP (rightly) refuses the injected axe script; the audit is about accessibility
    context = browser.new_context(
        base_url=live_app.url, viewport={"width": viewport[0], "height": viewport[1]}, bypass_csp=True
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        page.goto("/")
        assert axe_serious_violations(page) == []
        page.goto(f"/lessons/{LESSON}")
        expect(page.get_by_test_id("editor")).to_be_visible()
        replace_editor_text(page, WRONG_SOLUTION.read_text())
        page.get_by_test_id("run-button").click()
        expect(page.get_by_test_id("result-status")).to_have_attribute(
            "data-status", "fail", timeout=GRADING_TIMEOUT_MS
        )
        assert axe_serious_violations(page) == []
    finally:
        context.close()


def test_the_scale_chart_marks_the_overflow_the_grader_forced(page, js_errors, screenshot):
    """With a GradScaler the loss scale is flat while nothing overflows; the step the grader makes overflow
    shows as a marked back-off, so the chart teaches what the scaler does."""
    lesson = load_exercise("grad_scaler")
    page.goto("/lessons/grad_scaler")
    replace_editor_text(page, lesson.reference)
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "pass", timeout=GRADING_TIMEOUT_MS)
    chart = page.locator('svg[data-testid="chart"][data-chart-title^="GradScaler scale"]')
    expect(chart).to_have_count(1)
    marker = chart.get_by_test_id("chart-marker")
    expect(marker).to_have_count(1)
    expect(marker).to_contain_text("overflow forced by the grader")
    assert "backed off 1×" in chart.get_attribute("data-chart-title")
    chart.scroll_into_view_if_needed()
    screenshot(page, "13-scale-chart")
    assert not js_errors, js_errors


# Where each row of a wrapped editor line starts, and whether a row break falls inside a word: per .cm-line
# with more than one row, [first column's x, [x of each continuation row], [the two characters around each
# break]].
WRAPPED_ROWS = """lines => lines.map((line) => {
    const chars = [];
    const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.length; i++) {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const r = range.getClientRects()[0];
            if (r) chars.push({ ch: node.data[i], top: r.top, left: r.left });
        }
    }
    const text = chars.find((c) => c.ch !== " ");
    const rows = [];
    const breaks = [];
    chars.forEach((c, i) => {
        if (i && c.top > chars[i - 1].top + 2) {
            rows.push(c.left);
            breaks.push(chars[i - 1].ch + c.ch);
        }
    });
    return rows.length ? [text ? text.left : 0, rows, breaks] : null;
}).filter(Boolean)"""


@pytest.mark.parametrize("width", [1366, 360])
def test_the_editor_shows_every_line_whole_on_a_laptop_and_a_small_phone(viewport_page, width):
    """The longest signature of any lesson wraps instead of running past the editor's edge; on a phone each
    continuation row hangs deeper than its line's text (a wrap never reads as a dedent), and no row break cuts
    an identifier in two."""
    import re

    lessons = load_all()
    longest = max(lessons.values(), key=lambda ex: max(len(line) for line in ex.starter.splitlines()))
    page = viewport_page({"width": width, "height": 768 if width > 600 else 740})
    page.goto(f"/lessons/{longest.id}")
    scroller = page.locator('[data-testid="editor"] .cm-scroller')
    expect(scroller).to_be_visible()
    overflow = scroller.evaluate("s => s.scrollWidth - s.clientWidth")
    assert overflow <= 1, f"{longest.id}: the editor hides {overflow} px of its longest line at {width} px"
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    wrapped = page.locator('[data-testid="editor"] .cm-line').evaluate_all(WRAPPED_ROWS)
    if width < 600:
        assert wrapped, "at 360 px the longest line should wrap"
    for text_left, rows, breaks in wrapped:
        assert all(left > text_left + 1 for left in rows), (text_left, rows)
        assert not [b for b in breaks if re.fullmatch(r"\w\w", b)], breaks


DDP_LESSON = "ddp_mixed_precision"
DDP_WRONG = ROOT / "tests" / "submissions" / DDP_LESSON / "allreduce_every_micro_batch.py"


def test_the_ddp_lesson_is_solved_on_two_ranks_after_a_wrong_try(page, js_errors, screenshot):
    """A submission without no_sync() trains the same on both ranks, so only the trace can fail it: the call
    order names the all-reduce on every micro-batch at its line. The reference then passes, the two ranks
    agreeing with each other and with the one-process FP32 baseline."""
    lesson = load_exercise(DDP_LESSON)
    card = page.locator(f'[data-testid="lesson-card"][data-lesson-id="{DDP_LESSON}"]')
    page.goto("/")
    card.get_by_role("link").click()
    page.wait_for_url(f"**/lessons/{DDP_LESSON}")
    expect(page.get_by_test_id("editor")).to_be_visible()
    assert editor_text(page) == lesson.starter

    replace_editor_text(page, DDP_WRONG.read_text())
    page.get_by_test_id("run-button").click()
    badge = page.get_by_test_id("result-status")
    expect(badge).to_have_attribute("data-status", "fail", timeout=GRADING_TIMEOUT_MS)
    checks = check_statuses(page)
    assert checks["call_order"] == "fail" and checks["parity"] == "pass" and checks["ranks"] == "pass", checks
    finding = page.locator(
        '[data-testid="check-row"][data-check-id="call_order"] [data-finding-id="allreduce_every_micro_batch"]'
    )
    expect(finding).to_be_visible()
    expect(finding).to_contain_text("line 23")
    expect(finding).to_contain_text("model.no_sync()")
    ranks_row = page.locator('[data-testid="check-row"][data-check-id="ranks"]')
    expect(ranks_row).to_contain_text("Ranks agree")
    finding.scroll_into_view_if_needed()
    screenshot(page, "14-ddp-allreduce-every-micro-batch")

    replace_editor_text(page, lesson.reference)
    page.get_by_test_id("run-button").click()
    expect(badge).to_have_attribute("data-status", "pass", timeout=GRADING_TIMEOUT_MS)
    checks = check_statuses(page)
    assert set(checks) >= {"call_order", "parity", "ranks", "overflow", "coverage"}, checks
    assert set(checks.values()) == {"pass"}, checks
    expect(page.get_by_test_id("history").locator("a")).to_have_count(2)
    badge.scroll_into_view_if_needed()
    screenshot(page, "15-ddp-passed")

    page.goto("/")
    expect(card).to_have_attribute("data-progress", "passed")


def test_a_profiling_lesson_shows_the_graders_profile_of_the_given_step(page, js_errors, screenshot):
    """The starter of the profiling lesson is the slow step itself: its results show what the grader's own
    profile counted per step beside the learner's step, torch.profiler's busiest ops, each slowdown named with
    its line, and the GPU-only checks as not applicable."""
    lesson = load_exercise("profiling")
    page.goto("/lessons/profiling")
    expect(page.get_by_test_id("editor")).to_be_visible()
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "fail", timeout=GRADING_TIMEOUT_MS)
    statuses = check_statuses(page)
    assert statuses["host_syncs"] == "fail" and statuses["matmul_dtypes"] == "fail", statuses
    assert statuses["transfers"] == "not_applicable" and statuses["step_time"] == "not_applicable", statuses
    line = next(n for n, text in enumerate(lesson.starter.splitlines(), 1) if "print(" in text)
    sync_row = page.locator('[data-testid="check-row"][data-check-id="host_syncs"]')
    expect(sync_row.locator('[data-finding-id="host_sync_value"] .finding-line')).to_have_text(f"line {line}")
    chart = page.locator('svg[data-testid="chart"][data-chart-title^="Per step, the given step"]')
    expect(chart).to_have_count(1)
    assert "copies are counted on a GPU only" in chart.get_attribute("data-chart-title")
    ops = page.get_by_test_id("profile-ops")
    expect(ops).to_be_visible()
    expect(ops.locator("tbody tr").first).to_be_visible()
    expect(ops).to_contain_text("aten::")
    ops.scroll_into_view_if_needed()
    screenshot(page, "16-profile")
    assert not js_errors, js_errors


def test_a_refused_run_says_why_in_the_pages_language_and_keeps_the_last_result(page, exercise, js_errors):
    """Two of the learner's gradings still wait (sent by another tab of theirs), so the server refuses a third:
    the refusal is shown above the verdict the learner already had, which stays."""
    page.goto(f"/lessons/{LESSON}")
    replace_editor_text(page, exercise.reference)
    submit(page, "button")
    wait_for_result(page, "pass")
    token = page.evaluate("document.querySelector('meta[name=csrf-token]').content")
    other_tab = [
        page.request.post(
            f"/api/lessons/{LESSON}/submissions", data={"code": ENDLESS_LOOP}, headers={"X-CSRF-Token": token}
        )
        for _ in range(2)
    ]
    assert [r.status for r in other_tab] == [202, 202]
    try:
        with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/submissions")) as info:
            page.get_by_test_id("run-button").click()
        assert info.value.status == 429
        refusal = page.get_by_test_id("refusal")
        expect(refusal).to_be_visible()
        expect(refusal).to_contain_text("2 of your submissions are still waiting or being graded")
        expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "pass")
        expect(page.get_by_test_id("result-status")).to_be_visible()
        expect(page.get_by_test_id("run-button")).to_be_enabled()
    finally:
        for r in other_tab:
            page.request.post(r.json()["urls"]["cancel"], headers={"X-CSRF-Token": token})
    others = [e for e in js_errors if "status of 429" not in e]  # the browser logs the refused request itself
    assert not others, others

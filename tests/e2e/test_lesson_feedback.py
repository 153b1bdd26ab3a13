"""The verdict where the learner types, in a real browser at a laptop's and a phone's size, in Italian and
Indonesian: the first failing check comes into view with the focus, the editor marks the lines the findings
name (and forgets them on the next edit), the grading steps fold away, a syntax error reads as code that never
ran with a caret under the column, a restored draft says from when, and a mistyped address is a page with a way
back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .amp_dojo_live import CHROMIUM, REQUIRE_BROWSER

if not Path(CHROMIUM).exists() and not REQUIRE_BROWSER:
    pytest.skip(
        f"no Chromium at {CHROMIUM} (set AMP_DOJO_REQUIRE_BROWSER=1 to make this a failure)", allow_module_level=True
    )

from playwright.sync_api import expect

from .conftest import DESKTOP, PHONE
from .test_browser import GRADING_TIMEOUT_MS, LESSON, ROOT, WRONG_SOLUTION, replace_editor_text

SIZES = {"desktop": DESKTOP, "phone": PHONE}
MISSING_COLON = (
    "import torch\n\n\ndef train_step(model, optimizer, inputs, targets, device_type, amp_dtype)\n    pass\n"
)


def ui(lang: str) -> dict:
    return json.loads((ROOT / "webapp" / "translations" / f"{lang}.json").read_text(encoding="utf-8"))


def lesson_in(viewport_page, viewport: str, lang: str):
    page = viewport_page(SIZES[viewport])
    page.goto(f"/lessons/{LESSON}")
    page.locator(f'.lang-switch button[value="{lang}"]').click()
    page.wait_for_url(f"**/lessons/{LESSON}")
    expect(page.locator("html")).to_have_attribute("lang", lang)
    return page


def run_and_wait(page, status: str) -> None:
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", status, timeout=GRADING_TIMEOUT_MS)


def in_view(page, locator) -> bool:
    """The element's top edge is on screen (it may be taller than the screen) and no sticky bar covers it."""
    box = locator.bounding_box()
    height = page.evaluate("innerHeight")
    header = page.evaluate(
        "(() => { const h = document.querySelector('header'); if (!h) return 0;"
        " const s = getComputedStyle(h); return s.position === 'sticky' || s.position === 'fixed'"
        " ? h.getBoundingClientRect().bottom : 0; })()"
    )
    return box is not None and header - 1 <= box["y"] < height - 20


def gutter_marks(page, kind: str = "error"):
    return page.locator(f'[data-testid="editor"] .cm-gutter-lint .cm-lint-marker-{kind}')


def marked_line_numbers(page) -> list[int]:
    """The editor's line numbers beside which the lint gutter shows a marker (matched by their height on screen)."""
    return page.evaluate("""() => {
        const editor = document.querySelector('[data-testid="editor"]');
        const numbers = [...editor.querySelectorAll('.cm-lineNumbers .cm-gutterElement')]
            .filter((e) => /^\\d+$/.test(e.textContent));
        return [...editor.querySelectorAll('.cm-gutter-lint .cm-lint-marker')].map((m) => {
            const mid = m.getBoundingClientRect().top + m.getBoundingClientRect().height / 2;
            const row = numbers.find((n) => {
                const r = n.getBoundingClientRect();
                return r.top <= mid && mid <= r.bottom;
            });
            return row ? Number(row.textContent) : null;
        });
    }""")


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["it", "id"])
def test_the_first_failing_check_is_shown_with_the_focus_and_the_editor_marks_its_line(
    viewport_page, js_errors, screenshot, lang, viewport
):
    page = lesson_in(viewport_page, viewport, lang)
    wrong = WRONG_SOLUTION.read_text()
    replace_editor_text(page, wrong)
    run_and_wait(page, "fail")

    row = page.locator('[data-testid="check-row"][data-status="fail"]').first
    expect(row).to_be_focused()
    page.wait_for_function("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.wait_for_timeout(600)  # a smooth scroll ends within about half a second
    assert in_view(page, row), (row.bounding_box(), page.evaluate("innerHeight"))
    progress = page.get_by_test_id("progress")
    expect(progress).not_to_have_attribute("open", "")  # the steps fold away under their summary...
    expect(progress.locator("summary")).to_contain_text(ui(lang)["Grading steps"])
    assert progress.locator("li").count() > 3  # ...and are all still there
    screenshot(page, f"20-first-failing-check-{lang}-{viewport}")

    # The finding's line, as the results panel names it, is the line the gutter marks.
    finding = row.locator('[data-finding-id="backward_inside_autocast"]')
    line = int(re.search(r"\d+", finding.locator(".finding-line").inner_text()).group())
    assert wrong.splitlines()[line - 1].strip().endswith(".backward()"), wrong.splitlines()[line - 1]
    expect(gutter_marks(page)).to_have_count(1)
    page.locator('[data-testid="editor"] .cm-content').click()  # scrolls the editor back into view on a phone
    gutter_marks(page).first.scroll_into_view_if_needed()
    assert marked_line_numbers(page) == [line]
    gutter_marks(page).first.hover()
    tooltip = page.locator(".cm-tooltip-lint")
    expect(tooltip).to_be_visible()
    message = finding.locator(".finding-message").inner_text()
    expect(tooltip).to_contain_text(message)
    screenshot(page, f"21-gutter-mark-{lang}-{viewport}")

    # An edit makes the lines of the graded code stale: every mark goes.
    page.keyboard.press("End")
    page.keyboard.type("  # edited")
    expect(gutter_marks(page)).to_have_count(0)
    assert not js_errors, js_errors


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["it", "id"])
def test_a_syntax_error_reads_as_code_that_never_ran_with_a_caret_under_the_column(
    viewport_page, js_errors, screenshot, lang, viewport
):
    words = ui(lang)
    page = lesson_in(viewport_page, viewport, lang)
    replace_editor_text(page, MISSING_COLON)
    run_and_wait(page, "error")
    status = re.compile("^" + re.escape(words["Syntax error: your code did not run"]))  # then its score
    expect(page.get_by_test_id("status")).to_have_text(status)
    error = page.locator(".result-error")
    expect(error).to_be_focused()  # no check ran: the error is the first thing to read
    expect(error.locator(".error-kind")).to_have_text(words["Your code has a syntax error and did not run"])
    shown = error.locator(".error-line").inner_text().splitlines()
    signature = MISSING_COLON.splitlines()[3]
    assert shown[0] == f"4 | {signature}", shown  # the whole line, never clipped
    assert shown[1].strip() == "^" and shown[1].index("^") == len("4 | ") + len(signature), shown  # where ':' goes
    # On a phone the line scrolls sideways in its box, scrolled so that the caret is on screen.
    caret_right, box_right = (
        page.evaluate("""() => [document.querySelector('.error-caret'), document.querySelector('.error-line')]
        .map((e) => e.getBoundingClientRect().right)""")
    )
    assert caret_right <= box_right, (caret_right, box_right)
    # ... and its number stays in sight at the box's left edge.
    number_left, box_left = page.evaluate(
        """() => [document.querySelector('.error-lineno'), document.querySelector('.error-line')]
        .map((e) => e.getBoundingClientRect().left)"""
    )
    assert number_left >= box_left, (number_left, box_left)
    page.wait_for_timeout(600)
    assert in_view(page, error)
    expect(gutter_marks(page)).to_have_count(1)
    screenshot(page, f"22-syntax-error-{lang}-{viewport}")
    assert not js_errors, js_errors


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["it", "id"])
def test_a_restored_draft_says_when_it_was_saved(viewport_page, js_errors, lang, viewport):
    page = lesson_in(viewport_page, viewport, lang)
    replace_editor_text(page, "# my draft\n")
    page.reload()
    expect(page.get_by_test_id("editor")).to_contain_text("# my draft")
    said = page.locator(".draft-state")
    restored = ui(lang)["Draft restored: saved {time}"].split("{time}")[0]
    expect(said).to_contain_text(restored)
    assert re.search(r"\d{1,2}[:.]\d{2}", said.inner_text()), said.inner_text()  # a time of day follows
    assert not js_errors, js_errors


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["it", "id"])
def test_a_mistyped_lesson_is_a_page_in_the_readers_language_with_a_way_back(viewport_page, js_errors, lang, viewport):
    page = lesson_in(viewport_page, viewport, lang)
    response = page.goto("/lessons/autocats")
    assert response.status == 404
    back = page.get_by_test_id("error-lessons")
    expect(back).to_have_text(ui(lang)["Back to the lessons"])
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")
    back.click()
    page.wait_for_url("**/")
    expect(page.get_by_test_id("lesson-card").first).to_be_visible()
    # The browser logs the 404 of the page it was asked for; nothing else may go wrong.
    assert [e for e in js_errors if "status of 404" not in e] == [], js_errors

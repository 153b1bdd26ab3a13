"""What a learner trial in Italian and Indonesian found in the verdict's layout, in a real browser at a laptop's
size (1366x768) and a phone's (390x844), each verdict a stored result (tests/e2e/stored_results.py) rather than
a grading: the checks table fits its card in every shipped lesson (long titles wrap; verdict, finding and fix on
screen), a timeout brings its explanation into view and the status line states the limit that applied, the
editor's tooltip sits beside its line with the message and the fix apart, and on a phone a syntax error's line
shows its number."""

from __future__ import annotations

from pathlib import Path

import pytest

from .amp_dojo_live import CHROMIUM, REQUIRE_BROWSER, ROOT

if not Path(CHROMIUM).exists() and not REQUIRE_BROWSER:
    pytest.skip(
        f"no Chromium at {CHROMIUM} (set AMP_DOJO_REQUIRE_BROWSER=1 to make this a failure)", allow_module_level=True
    )

from playwright.sync_api import expect

from .conftest import DESKTOP, PHONE
from .stored_results import advice_result, failing_result, finding_result, show_stored, timeout_result

LANGS = ["it", "id"]
LESSONS = sorted(p.stem for p in (ROOT / "exercises").glob("*.yaml"))


def open_lesson(page, lesson: str, lang: str | None = None) -> None:
    page.goto(f"/lessons/{lesson}")
    if lang and page.locator("html").get_attribute("lang") != lang:
        page.locator(f'.lang-switch button[value="{lang}"]').click()
        page.wait_for_url(f"**/lessons/{lesson}")
        expect(page.locator("html")).to_have_attribute("lang", lang)


def checks_table_problems(page) -> list[str]:
    """What of the checks table is wider than its card or off the screen: the table, a row's verdict, finding
    or fix, or a title that does not wrap."""
    return page.evaluate("""() => {
        const problems = [];
        const card = document.querySelector('[data-testid="results"]').getBoundingClientRect();
        const table = document.querySelector(".checks");
        if (table.getBoundingClientRect().right > card.right + 0.5) {
            problems.push(`the table is ${Math.round(table.getBoundingClientRect().width)} px wide in a ${Math.round(card.width)} px card`);
        }
        for (const row of table.querySelectorAll("tbody tr")) {
            const name = row.dataset.checkId;
            for (const part of row.querySelectorAll("th, .badge, .finding-message, .finding-fix, .measure-value")) {
                const r = part.getBoundingClientRect();
                if (r.right > card.right + 0.5 || r.right > window.innerWidth || r.width === 0) {
                    problems.push(`${name}: "${part.textContent.trim().slice(0, 40)}" is not inside the card`);
                }
                if (part.scrollWidth > part.clientWidth + 1) problems.push(`${name}: "${part.textContent.trim().slice(0, 40)}" is cut off`);
            }
        }
        return problems;
    }""")


@pytest.mark.parametrize("lang", LANGS)
def test_checks_table_fits_its_card_in_every_lesson(viewport_page, lang):
    page = viewport_page(DESKTOP)
    problems = {}
    for lesson in LESSONS:
        open_lesson(page, lesson, lang)
        show_stored(page, failing_result(lesson), lang)
        problems[lesson] = checks_table_problems(page)
    assert not {k: v for k, v in problems.items() if v}, problems


def in_view(page, selector: str) -> bool:
    """The element's top edge is on the screen, below any sticky header."""
    return page.evaluate(
        """(selector) => {
        const box = document.querySelector(selector).getBoundingClientRect();
        const header = document.querySelector(".site-header");
        const sticky = header && ["sticky", "fixed"].includes(getComputedStyle(header).position);
        const top = sticky ? header.getBoundingClientRect().bottom : 0;
        return box.top >= top - 1 && box.top < window.innerHeight - 20;
    }""",
        selector,
    )


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("lang", LANGS)
def test_a_timeout_brings_its_explanation_into_view_not_the_checks_it_left_unrun(viewport_page, lang, size):
    page = viewport_page(size)
    open_lesson(page, "autocast", lang)
    show_stored(page, timeout_result("autocast", line=11), lang)
    error = page.locator(".result-error")
    expect(error).to_be_focused()
    expect(error).to_contain_text("11")
    page.wait_for_timeout(600)  # the smooth scroll
    assert in_view(page, ".result-error")


@pytest.mark.parametrize("lang", LANGS)
def test_the_editors_tooltip_sits_beside_its_line_with_code_and_the_fix_apart(viewport_page, lang):
    page = viewport_page(DESKTOP)
    open_lesson(page, "autocast", lang)
    show_stored(page, finding_result("autocast", line=8), lang)
    marker = page.locator('[data-testid="editor"] .cm-gutter-lint .cm-lint-marker').first
    marker.hover()
    tip = page.locator(".cm-tooltip .mark-tip")
    expect(tip).to_be_visible()
    boxes = page.evaluate("""() => {
        const box = (e) => e.getBoundingClientRect().toJSON();
        const tip = document.querySelector(".cm-tooltip .mark-tip");
        return { tooltip: box(tip.closest(".cm-tooltip")), editor: box(document.querySelector('[data-testid="editor"]')),
                 message: box(tip.querySelector(".mark-message")), fix: box(tip.querySelector(".mark-fix")),
                 code: [...tip.querySelectorAll("code")].map((c) => c.textContent), text: tip.textContent };
    }""")
    tooltip, editor = boxes["tooltip"], boxes["editor"]
    assert tooltip["left"] >= editor["left"] - 1 and tooltip["right"] <= DESKTOP["width"], boxes  # not over the text
    assert tooltip["width"] <= editor["width"], boxes
    assert boxes["fix"]["top"] >= boxes["message"]["bottom"], boxes  # the fix on a line of its own
    assert "with accelerator.accumulate(model):" in boxes["code"] and "`" not in boxes["text"], boxes


@pytest.mark.parametrize("lang", LANGS)
def test_a_checks_advice_is_said_once_not_again_in_the_notes(viewport_page, lang):
    page = viewport_page(DESKTOP)
    open_lesson(page, "compile_autocast", lang)
    show_stored(page, advice_result("compile_autocast"), lang)
    expect(page.locator('.check-row[data-check-id="call_order"] .finding')).to_have_count(1)
    expect(page.locator(".result-body .notes li")).to_have_count(0)

"""The phone layout, end to end in a real browser at 360 and 390 px wide (a small and a common phone) in
Italian and Indonesian, whose words are longer than English ones; and the laptop layout (1366x768) as it was.

On a phone: the lesson's title and task come before the editor, the header scrolls away, nothing makes the
page scroll sideways, no text of a chart covers another or leaves the chart (long titles wrap), and the tables
of a course, of the instructor's dashboard and of its learners' progress are stacked, one card per row, with
nothing cut off. Screenshots of each page go to artifacts/screenshots/phone-*.png."""

from __future__ import annotations

import time
import uuid

import pytest
from playwright.sync_api import expect

from grader.lesson.loader import load_exercise

from .conftest import DESKTOP
from .test_browser import GRADING_TIMEOUT_MS, LESSON, replace_editor_text
from .test_classroom import (
    CLIP_WITHOUT_UNSCALE,
    create_course,
    create_instructor,
    sign_in,
    sign_up_and_join,
    submit_from_the_course,
)
from .test_classroom import LESSON as COURSE_LESSON

WIDTHS = [360, 390]
LANGS = ["it", "id"]


def phone(width: int) -> dict:
    return {"width": width, "height": 800}


def choose_language(page, lang: str) -> None:
    page.locator(f'.lang-switch button[value="{lang}"]').click()
    expect(page.locator("html")).to_have_attribute("lang", lang)


def sideways_scroll(page) -> int:
    """How far the page itself scrolls sideways, in px (0: not at all)."""
    return page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")


def chart_text_problems(page) -> list[str]:
    """Every pair of <text> in one chart whose boxes overlap, every text that leaves its chart, and every
    chart whose title is not shown whole (its title lines joined differ from the title)."""
    return page.evaluate("""() => {
        const problems = [];
        for (const svg of document.querySelectorAll('svg[data-testid="chart"]')) {
            const name = svg.dataset.chartTitle;
            const box = svg.getBoundingClientRect();
            const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim())
                .map((t) => ({ t: t.textContent, r: t.getBoundingClientRect() }));
            texts.forEach(({ t, r }, i) => {
                if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5
                    || r.bottom > box.bottom + 0.5) problems.push(`${name}: "${t}" leaves the chart`);
                for (const other of texts.slice(i + 1)) {
                    const w = Math.min(r.right, other.r.right) - Math.max(r.left, other.r.left);
                    const h = Math.min(r.bottom, other.r.bottom) - Math.max(r.top, other.r.top);
                    if (w > 0.5 && h > 0.5) problems.push(`${name}: "${t}" overlaps "${other.t}"`);
                }
            });
            const title = [...svg.querySelectorAll("text.amp-chart-title")].map((t) => t.textContent).join(" ");
            if (title.replace(/\\s+/g, " ") !== name.replace(/\\s+/g, " ")) {
                problems.push(`title shown as "${title}", not "${name}"`);
            }
            if (box.right > window.innerWidth + 0.5) problems.push(`${name}: the chart is cut at the right`);
        }
        return problems;
    }""")


def table_problems(page, settle_s: float = 5.0, tables: str = "table.data-table") -> list[str]:
    """For every data table (or every table `tables` selects): a body row that is not stacked into a card, a cell
    without its column's label shown before it, or a cell, or anything in one, cut off or past the screen's edge. The page's script still
    writes dates and counts in the page's language (Intl) just after load, which lays cards out again: the
    problems are those still there once the page has had `settle_s` to settle. (A run once failed here on the
    learner's course page and passed when run again; a script still laying the page out is the likely cause,
    not a proven one.)"""
    deadline = time.monotonic() + settle_s
    while (problems := _table_problems_now(page, tables)) and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    return problems


def _table_problems_now(page, tables: str) -> list[str]:
    return page.evaluate(
        """(tables) => {
        const problems = [];
        const width = window.innerWidth;
        for (const table of document.querySelectorAll(tables)) {
            const name = table.dataset.testid || table.className;
            if (table.getBoundingClientRect().right > width + 0.5) problems.push(`${name}: past the screen`);
            for (const row of table.querySelectorAll("tbody tr")) {
                const rowBox = row.getBoundingClientRect();
                if (getComputedStyle(row).display !== "grid") problems.push(`${name}: a row is not a card`);
                for (const cell of row.children) {
                    const r = cell.getBoundingClientRect();
                    const where = `${name} ${cell.dataset.label || cell.textContent.trim().slice(0, 20)}`;
                    if (r.left < rowBox.left - 0.5 || r.right > rowBox.right + 0.5) problems.push(`${where}: out of its card`);
                    if (cell.scrollWidth > cell.clientWidth + 1) problems.push(`${where}: cut off`);
                    for (const part of cell.querySelectorAll("*")) {
                        const p = part.getBoundingClientRect();
                        if (p.width && (p.right > r.right + 0.5 || p.right > width)) {
                            problems.push(`${where}: "${part.textContent.trim()}" cut off`);
                        }
                    }
                    const label = getComputedStyle(cell, "::before").content;
                    if (cell.tagName === "TD" && cell.dataset.label && (label === "none" || label === '""')) {
                        problems.push(`${where}: its label is not shown`);
                    }
                    if (cell.tagName === "TD" && !cell.dataset.label && !cell.matches(".pick-box, .pick-title")) {
                        problems.push(`${where}: no data-label`);
                    }
                }
            }
        }
        return problems;
    }""",
        tables,
    )


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("width", WIDTHS)
def test_title_and_task_come_before_the_editor_and_charts_keep_their_text_apart_on_a_phone(
    viewport_page, js_errors, screenshot, width, lang
):
    page = viewport_page(phone(width))
    page.goto(f"/lessons/{LESSON}")
    choose_language(page, lang)
    expect(page.get_by_test_id("editor")).to_be_visible()

    title = page.locator("#lesson-title").bounding_box()
    task = page.locator(".task").bounding_box()
    editor = page.get_by_test_id("editor").bounding_box()
    lesson_text = page.locator(".lesson-body").bounding_box()
    assert title["y"] < 250, f"the title starts {title['y']:.0f} px down"
    assert title["y"] + title["height"] <= task["y"] < editor["y"], (title, task, editor)
    assert editor["y"] < lesson_text["y"], "the lesson's text comes after the editor on a phone"
    assert page.locator(".site-header").evaluate("h => getComputedStyle(h).position") == "static"
    assert sideways_scroll(page) <= 0
    screenshot(page, f"phone-{width}-{lang}-lesson-top")

    replace_editor_text(page, load_exercise(LESSON).reference)
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "pass", timeout=GRADING_TIMEOUT_MS)
    charts = page.locator('svg[data-testid="chart"]')
    expect(charts.first).to_be_visible()
    assert charts.count() >= 2, charts.count()  # the loss, and its difference to FP32's
    assert chart_text_problems(page) == []
    assert sideways_scroll(page) <= 0
    for i in range(charts.count()):
        charts.nth(i).scroll_into_view_if_needed()
        screenshot(page, f"phone-{width}-{lang}-chart-{i + 1}")

    # The profiling lesson's starter: a bar chart with the longest title and labels of all.
    page.goto("/lessons/profiling")
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "fail", timeout=GRADING_TIMEOUT_MS)
    bars = page.locator("svg.amp-chart-bar")
    expect(bars.first).to_be_visible()
    assert chart_text_problems(page) == []
    assert sideways_scroll(page) <= 0
    bars.first.scroll_into_view_if_needed()
    screenshot(page, f"phone-{width}-{lang}-bar-chart")
    assert not js_errors, js_errors


@pytest.mark.parametrize("lang", LANGS)
def test_the_profiler_table_is_stacked_into_cards_at_360_px(viewport_page, js_errors, screenshot, lang):
    """The profiling lesson's torch.profiler table: one card per op, each figure labelled with its column, nothing
    scrolling sideways inside its card or the page. At 1366 px it stays a table."""
    page = viewport_page(phone(360))
    page.goto("/lessons/profiling")
    choose_language(page, lang)
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute("data-status", "fail", timeout=GRADING_TIMEOUT_MS)
    ops = page.get_by_test_id("profile-ops")
    expect(ops.locator("tbody tr").first).to_be_visible()
    assert ops.locator("tbody tr").count() >= 3
    assert table_problems(page, tables="table.profile-table") == []
    assert ops.evaluate("figure => figure.scrollWidth - figure.clientWidth") <= 0, "the card scrolls sideways"
    assert sideways_scroll(page) <= 0
    labels = (
        ops.locator("tbody tr")
        .first.locator("td")
        .evaluate_all("cells => cells.map((c) => getComputedStyle(c, '::before').content)")
    )
    headers = ops.locator("thead th").all_inner_texts()[1:]
    assert labels == [f'"{h}"' for h in headers], (labels, headers)  # each figure named in the page's language
    ops.scroll_into_view_if_needed()
    screenshot(page, f"phone-360-{lang}-profiler-table")

    page.set_viewport_size(DESKTOP)
    assert ops.locator("thead").evaluate("h => getComputedStyle(h).position") != "absolute"
    assert ops.locator("tbody tr").first.evaluate("r => getComputedStyle(r).display") == "table-row"
    assert not js_errors, js_errors


PARTS = ["#lesson-title", ".task", ".workbench", ".lesson-body", ".hints", ".quiz"]


@pytest.mark.parametrize("size", ["phone", "laptop"])
def test_the_keyboard_and_screen_readers_meet_title_task_and_editor_before_the_lesson_text(
    viewport_page, js_errors, size
):
    """The lesson page's parts are in the page's own order as a phone shows them, not moved there by CSS: a
    screen reader reads title, task, editor, lesson text, hints, quiz; Tab from the breadcrumb reaches the editor
    before any control of the lesson's text, hints or quiz (at 1366 px as well, where the editor is beside them)."""
    page = viewport_page(phone(390) if size == "phone" else DESKTOP)
    page.goto(f"/lessons/{LESSON}")
    expect(page.get_by_test_id("editor")).to_be_visible()
    in_dom_order = page.evaluate(
        """(parts) => parts.map((s) => document.querySelector(s)).every((part, i, all) =>
            i === 0 || (all[i - 1].compareDocumentPosition(part) & Node.DOCUMENT_POSITION_FOLLOWING))""",
        PARTS,
    )
    assert in_dom_order, "the page's parts are not in the order title, task, editor, text, hints, quiz"
    if size == "phone":
        tops = [page.locator(part).first.bounding_box()["y"] for part in PARTS]
        assert tops == sorted(tops), dict(zip(PARTS, tops))  # and shown in that order

    page.locator(".lesson-head .breadcrumb a").focus()
    met = []
    for _ in range(30):
        page.keyboard.press("Tab")
        met.append(
            page.evaluate("""() => {
                const a = document.activeElement;
                if (a.closest(".cm-content")) return "editor";
                const where = a.closest(".lesson-body, .hints, .quiz");
                if (where) return "lesson text: " + where.className + " " + a.textContent.trim().slice(0, 30);
                return a.dataset.testid || a.id || a.tagName;
            }""")
        )
        if met[-1] == "editor" or met[-1].startswith("lesson text"):
            break
    assert met[-1] == "editor", met
    assert not js_errors, js_errors


def test_the_laptop_layout_keeps_the_editor_beside_the_lesson_text(viewport_page, js_errors, screenshot):
    page = viewport_page(DESKTOP)
    page.goto(f"/lessons/{LESSON}")
    expect(page.get_by_test_id("editor")).to_be_visible()
    text = page.locator(".lesson-body").bounding_box()
    bench = page.locator(".workbench").bounding_box()
    assert bench["x"] >= text["x"] + text["width"], (text, bench)
    head = page.locator(".lesson-head").bounding_box()
    assert abs(bench["y"] - head["y"]) < 5, (head, bench)
    assert head["y"] + head["height"] <= text["y"] and abs(head["x"] - text["x"]) < 1, (head, text)
    assert page.locator(".task").bounding_box()["y"] > text["y"] + text["height"] - 1
    hints, quiz = page.locator(".hints").bounding_box(), page.locator(".quiz").bounding_box()
    assert page.locator(".task").bounding_box()["y"] < hints["y"] < quiz["y"], (hints, quiz)
    assert page.locator(".site-header").evaluate("h => getComputedStyle(h).position") == "sticky"
    assert sideways_scroll(page) <= 0
    screenshot(page, "desktop-lesson")
    assert not js_errors, js_errors


@pytest.fixture(scope="module")
def course_with_a_mistake(browser, live_app):
    """An instructor's course with one learner whose submission made a mistake: names and the dashboard's URL."""
    names = {"teacher": f"t-{uuid.uuid4().hex[:8]}", "learner": f"l-{uuid.uuid4().hex[:8]}"}
    create_instructor(live_app, names["teacher"])
    contexts = [browser.new_context(base_url=live_app.url, viewport=DESKTOP) for _ in range(2)]
    try:
        teacher, learner = (c.new_page() for c in contexts)
        for pg in (teacher, learner):
            pg.set_default_timeout(15_000)
        sign_in(teacher, names["teacher"])
        names["dashboard"], code = create_course(
            teacher,
            "Presisi campuran, semester genap 2026",
            [COURSE_LESSON, "autocast"],
            {COURSE_LESSON: "2040-06-30"},
        )
        sign_up_and_join(learner, names["learner"], code)
        submit_from_the_course(learner, CLIP_WITHOUT_UNSCALE.read_text())
        expect(learner.get_by_test_id("result-status")).to_have_attribute(
            "data-status", "fail", timeout=GRADING_TIMEOUT_MS
        )
    finally:
        for c in contexts:
            c.close()
    return names


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("width", WIDTHS)
def test_course_and_dashboard_tables_are_stacked_cards_with_nothing_cut_off_on_a_phone(
    viewport_page, course_with_a_mistake, js_errors, screenshot, width, lang
):
    names = course_with_a_mistake
    teacher = viewport_page(phone(width))
    sign_in(teacher, names["teacher"])
    choose_language(teacher, lang)

    teacher.goto(names["dashboard"])
    for table in ("lesson-stats", "mistakes", "learners"):
        expect(teacher.get_by_test_id(table).locator("tbody tr").first).to_be_visible()
    assert table_problems(teacher) == []
    assert sideways_scroll(teacher) <= 0
    bar = teacher.locator('[data-testid="mistake-chart"] [data-finding-id] .bar').first
    expect(bar).to_be_visible()
    chart = teacher.get_by_test_id("mistake-chart")
    sizes = chart.locator(".mistake-label, .count").evaluate_all(
        "els => els.map((e) => [parseFloat(getComputedStyle(e).fontSize), e.getBoundingClientRect().right])"
    )
    assert sizes and all(size >= 12 and right <= width for size, right in sizes), sizes
    screenshot(teacher, f"phone-{width}-{lang}-dashboard", full_page=True)

    teacher.locator(f'[data-testid="learners"] tr[data-username="{names["learner"]}"] a').click()
    expect(teacher.get_by_test_id("learner-progress")).to_be_visible()
    assert table_problems(teacher) == []
    assert sideways_scroll(teacher) <= 0
    screenshot(teacher, f"phone-{width}-{lang}-dashboard-learner", full_page=True)

    teacher.goto(names["dashboard"] + "/edit")
    expect(teacher.locator("table.lesson-pick")).to_be_visible()
    assert table_problems(teacher) == []
    assert sideways_scroll(teacher) <= 0
    save = teacher.get_by_test_id("save-course").bounding_box()
    last_row = teacher.locator("table.lesson-pick tbody tr").last.bounding_box()
    assert save["y"] >= last_row["y"] + last_row["height"], "the form's button overlaps its lessons"
    screenshot(teacher, f"phone-{width}-{lang}-edit-course", full_page=True)

    learner = viewport_page(phone(width))
    sign_in(learner, names["learner"])
    choose_language(learner, lang)
    learner.goto("/courses")
    learner.locator(".course-list a").first.click()
    expect(learner.get_by_test_id("course-lessons")).to_be_visible()
    assert table_problems(learner) == []
    assert sideways_scroll(learner) <= 0
    screenshot(learner, f"phone-{width}-{lang}-course", full_page=True)
    assert not js_errors, js_errors

"""End to end, in Italian and Indonesian at 1366x768 and at 390x844: an instructor's term tools. The class is
put in the database directly (two learners whose best submissions are renamed copies, a third who differs: no
grading needed), then in the browser the instructor sets a late policy, grants one learner an extension,
imports a roster from a CSV file, and has the class compared by the live worker; the similar pair opens side by
side. The learner with the extension sees it. No page scrolls sideways, and no date is written as ISO."""

from __future__ import annotations

import re
import sys
import time

import pytest
from playwright.sync_api import expect

from .amp_dojo_live import ROOT
from .conftest import DESKTOP, PHONE
from .test_classroom import LESSON, PASSWORD, create_instructor, sign_in

ISO_DAY = re.compile(r"\b20\d\d-\d\d-\d\d\b")
# the innermost elements that reach past the viewport's right edge, to name what made a page scroll sideways
WIDEST = """[...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1)
  .filter(e => ![...e.children].some(c => c.getBoundingClientRect().right > innerWidth + 1))
  .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right) + ': '
  + (e.textContent || '').trim().slice(0, 60))"""


def the_class(live_app, tag: str) -> int:
    """A course of LESSON taught by teacher-<tag>, three learners with a scored submission each: its id."""
    sys.path.insert(0, str(ROOT / "tests" / "webapp"))
    from class_solutions import renamed, solutions

    from webapp import accounts, classroom
    from webapp.db import connect

    create_instructor(live_app, f"teacher-{tag}")
    with connect(live_app.settings["DATABASE"]) as db:
        teacher = accounts.by_username(db, f"teacher-{tag}")
        course = classroom.create(db, f"Term {tag}", [(LESSON, 1896134399.0)], teacher.id)  # due 2030-01-31
        original = solutions(30)[7]
        for n, (name, code) in enumerate(
            [(f"ada-{tag}", original), (f"bob-{tag}", renamed(original)), (f"cyd-{tag}", solutions(30)[25])]
        ):
            user = accounts.create(db, name, PASSWORD)
            classroom.enroll(db, course, user.id)
            now = time.time()
            db.execute(
                "INSERT INTO submissions (id, learner, lesson, code, status, created_at, queued_at, result_status, "
                "score) VALUES (?, ?, ?, ?, 'done', ?, ?, 'pass', 1.0)",
                (f"e2e-{tag}-{n}", user.learner, LESSON, code, now, now),
            )
    return course


def fits(page) -> None:
    """Nothing scrolls sideways, and dates are the locale's."""
    page.wait_for_load_state("load")  # a badge can be visible before the page after a POST has finished loading
    width = page.evaluate("document.scrollingElement.scrollWidth")
    wide = page.evaluate(WIDEST) if width > page.viewport_size["width"] + 1 else None
    assert width <= page.viewport_size["width"] + 1, (page.url, width, wide)
    text = page.locator("main").inner_text()
    assert not ISO_DAY.search(text), (page.url, ISO_DAY.search(text))


# each language and each size once (a run is ~20 s of a live class on 2 cores): Italian at the desktop, Indonesian on a phone
@pytest.mark.parametrize(("lang", "viewport"), [("it", "desktop"), ("id", "phone")])
def test_an_instructors_term_tools_in_italian_and_indonesian(viewport_page, live_app, tmp_path, lang, viewport):
    tag = f"{lang}-{viewport}"
    course = the_class(live_app, tag)
    size = DESKTOP if viewport == "desktop" else PHONE
    teacher, ada = viewport_page(size), viewport_page(size)
    for page in (teacher, ada):
        page.context.add_cookies([{"name": "lang", "value": lang, "url": live_app.url}])
    sign_in(teacher, f"teacher-{tag}")
    teacher.goto(f"/teach/courses/{course}")
    expect(teacher.locator("html")).to_have_attribute("lang", lang)
    teacher.get_by_test_id("late-policy-kind").select_option("penalty")
    teacher.get_by_test_id("late-per-day").fill("10")
    teacher.get_by_test_id("late-floor").fill("50")
    teacher.get_by_test_id("late-policy-form").locator("button").click()
    expect(teacher.get_by_test_id("notice-saved")).to_be_visible()
    expect(teacher.get_by_test_id("late-policy-words")).to_contain_text("10")
    fits(teacher)

    teacher.locator(f'tr[data-username="ada-{tag}"] a').first.click()
    teacher.get_by_test_id("extension-deadline").fill("2030-02-05")
    teacher.get_by_test_id("extension-note-field").fill("medical")
    teacher.get_by_test_id("grant-extension").click()
    expect(teacher.get_by_test_id("extended")).to_be_visible()
    fits(teacher)

    csv_file = tmp_path / "roster.csv"
    csv_file.write_text(f"username,email\nzed-{tag},zed@example.org\n", encoding="utf-8-sig")
    teacher.goto(f"/teach/courses/{course}/roster")
    teacher.get_by_test_id("roster-file").set_input_files(str(csv_file))
    teacher.get_by_test_id("roster-import").click()
    expect(teacher.get_by_test_id("roster-link")).to_have_count(1)
    fits(teacher)

    teacher.goto(f"/teach/courses/{course}/similarity")
    teacher.get_by_test_id("compare").click()
    expect(teacher.get_by_test_id("similar-pair").first).to_be_visible(timeout=30_000)  # the worker computed it
    fits(teacher)
    teacher.get_by_test_id("similar-pair").first.locator("a").click()
    expect(teacher.get_by_test_id("overlap").first).to_be_visible()
    fits(teacher)

    sign_in(ada, f"ada-{tag}")
    ada.goto(f"/courses/{course}")
    expect(ada.get_by_test_id("extended")).to_be_visible()
    expect(ada.get_by_test_id("late-policy-words")).to_contain_text("50")
    fits(ada)

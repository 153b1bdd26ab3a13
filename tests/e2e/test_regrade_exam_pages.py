"""End to end, in a real browser, in Italian and Indonesian at 1366x768 and 390x844: an instructor opens the
regrade page from the course dashboard and previews a regrade (no graded submission yet: the preview is ready
at once and says nobody's result changes, so no grading runs), then sets an exam window on the exam page and
sees it written with dates in the page's language; neither page scrolls sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import DESKTOP, PHONE
from .test_classroom import LESSON, create_instructor, sign_in
from .test_course_term import send
from .test_phone_layout import choose_language

WORDS = {  # the regrade page's title, the exam page's title, and 2040-06-30 09:00 UTC as the language writes it
    "it": ("Nuova valutazione", "Modalità esame", "30 giu 2040, 09:00"),
    "id": ("Penilaian ulang", "Mode ujian", "30 Jun 2040 09.00"),
}


def no_sideways_scroll(page) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px"


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("lang", ["it", "id"])
def test_an_instructor_previews_a_regrade_and_sets_an_exam_window_in_their_language(
    viewport_page, live_app, js_errors, screenshot, lang, viewport
):
    name = f"rx-{lang}-{viewport}"
    create_instructor(live_app, name)
    teacher = viewport_page(DESKTOP if viewport == "desktop" else PHONE)
    sign_in(teacher, name)
    choose_language(teacher, lang)
    teacher.get_by_test_id("nav-courses").click()
    teacher.get_by_test_id("new-course").click()
    teacher.get_by_test_id("course-name").fill(f"Exam {lang} {viewport}")
    teacher.get_by_test_id(f"pick-{LESSON}").check()
    send(teacher, "create-course")
    teacher.wait_for_url("**/teach/courses/*")
    regrade_title, exam_title, start = WORDS[lang]

    teacher.get_by_test_id("regrade-link").click()
    expect(teacher.locator("h1")).to_have_text(regrade_title)
    teacher.get_by_test_id("regrade-start").click()
    expect(teacher.get_by_test_id("regrade-state")).to_have_attribute("data-state", "previewed")
    expect(teacher.get_by_test_id("flips")).to_be_visible()
    no_sideways_scroll(teacher)
    screenshot(teacher, f"70-regrade-{lang}-{viewport}", full_page=True)

    teacher.go_back()
    teacher.go_back()
    teacher.get_by_test_id("exam-link").click()
    expect(teacher.locator("h1")).to_have_text(exam_title)
    teacher.get_by_test_id("exam-starts").fill("2040-06-30T09:00")
    teacher.get_by_test_id("exam-ends").fill("2040-06-30T11:00")
    teacher.get_by_test_id(f"exam-lesson-{LESSON}").check()
    teacher.get_by_test_id("exam-hold").check()
    teacher.get_by_test_id("exam-save").click()
    expect(teacher.get_by_test_id("notice-saved")).to_be_visible()
    window = teacher.get_by_test_id("exam-window")
    expect(window).to_contain_text(start)
    expect(teacher.get_by_test_id("exam-hold")).to_be_checked()
    no_sideways_scroll(teacher)
    screenshot(teacher, f"71-exam-{lang}-{viewport}", full_page=True)
    assert not js_errors, js_errors

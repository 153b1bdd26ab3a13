"""End to end, in a real browser, against the real app (web server + grading
worker subprocesses): an instructor (made with `amp-dojo create-instructor`)
creates a course; two learners sign up, join it with its code and submit (one
passes the grad_scaler lesson, one clips before unscaling); the dashboard shows
1 passed, 1 attempted and that mistake ranked first; the gradebook CSV holds
both learners; the dashboard is translated like the rest of the interface; a
learner opening the dashboard's address gets 403. Two gradings in all."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys

from playwright.sync_api import expect

from grader.lesson.loader import load_exercise

from .amp_dojo_live import ROOT
from .test_browser import GRADING_TIMEOUT_MS, editor_text, replace_editor_text

LESSON = "grad_scaler"
PASSWORD = "correct-horse-battery"
CLIP_WITHOUT_UNSCALE = ROOT / "tests" / "submissions" / LESSON / "clip_without_unscale.py"


def create_instructor(live_app, name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "webapp.cli", "create-instructor", name, "--password-stdin"],
        cwd=ROOT,
        env=live_app.env(),
        input=PASSWORD + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def new_page(browser, live_app, js_errors):
    context = browser.new_context(base_url=live_app.url, viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.on("console", lambda msg: js_errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: js_errors.append(f"pageerror: {exc}"))
    return page


def sign_in(page, name: str) -> None:
    page.goto("/")
    page.get_by_test_id("nav-signin").click()
    page.get_by_test_id("username").fill(name)
    page.get_by_test_id("password").fill(PASSWORD)
    page.get_by_test_id("signin-button").click()
    expect(page.get_by_test_id("signed-in-as")).to_have_text(name)


def create_course(teacher, name: str, lessons: list[str], deadlines: dict | None = None) -> tuple[str, str]:
    """The signed-in instructor creates a course of `lessons` (in that order) from the courses page: its
    dashboard's URL and its join code."""
    teacher.get_by_test_id("nav-courses").click()
    teacher.get_by_test_id("new-course").click()
    teacher.get_by_test_id("course-name").fill(name)
    for lesson in lessons:
        teacher.get_by_test_id(f"pick-{lesson}").check()
    for lesson, day in (deadlines or {}).items():
        teacher.get_by_test_id(f"deadline-{lesson}").fill(day)
    teacher.get_by_test_id("create-course").click()
    teacher.wait_for_url("**/teach/courses/*")
    return teacher.url, teacher.get_by_test_id("join-code-value").inner_text()


def sign_up_and_join(page, name: str, code: str) -> None:
    page.goto("/")
    page.get_by_test_id("nav-signup").click()
    page.get_by_test_id("username").fill(name)
    page.get_by_test_id("password").fill(PASSWORD)
    page.get_by_test_id("password2").fill(PASSWORD)
    page.get_by_test_id("signup-button").click()
    expect(page.get_by_test_id("signed-in-as")).to_have_text(name)
    page.get_by_test_id("nav-courses").click()
    page.get_by_test_id("join-code").fill(code.lower())
    page.get_by_test_id("join-button").click()
    expect(page.locator(f'tr[data-lesson-id="{LESSON}"]')).to_have_attribute("data-progress", "not_started")


def submit_from_the_course(page, code: str) -> None:
    page.locator(f'tr[data-lesson-id="{LESSON}"] a').click()
    page.wait_for_url(f"**/lessons/{LESSON}")
    replace_editor_text(page, code)
    page.get_by_test_id("run-button").click()


def test_a_class_in_a_course_and_its_mistakes_on_the_instructors_dashboard(browser, live_app, js_errors, screenshot):
    create_instructor(live_app, "teacher")
    teacher, ada, bob = (new_page(browser, live_app, js_errors) for _ in range(3))
    try:
        sign_in(teacher, "teacher")
        dashboard, code = create_course(teacher, "Mixed precision, spring", [LESSON, "autocast"])
        assert re.fullmatch(r"[A-Z0-9]{8}", code), code

        exercise = load_exercise(LESSON)
        sign_up_and_join(ada, "ada", code)
        submit_from_the_course(ada, exercise.reference)
        sign_up_and_join(bob, "bob", code)
        submit_from_the_course(bob, CLIP_WITHOUT_UNSCALE.read_text())
        for page, verdict in ((ada, "pass"), (bob, "fail")):
            expect(page.get_by_test_id("result-status")).to_have_attribute(
                "data-status", verdict, timeout=GRADING_TIMEOUT_MS
            )
        bob_finding = bob.locator('[data-finding-id="clip_without_unscale"]')
        expect(bob_finding).to_be_visible()

        # Bob takes his submission back into the editor from his history.
        replace_editor_text(bob, "# starting over\n")
        bob.get_by_test_id("load-submission").first.click()
        expect(bob.locator(".draft-state")).to_contain_text("Loaded the submission")
        assert editor_text(bob) == CLIP_WITHOUT_UNSCALE.read_text()

        teacher.goto(dashboard)
        row = teacher.locator(f'[data-testid="lesson-stats"] tr[data-lesson-id="{LESSON}"]')
        expect(row.get_by_test_id("passed")).to_have_text("1")
        expect(row.get_by_test_id("attempted")).to_have_text("1")
        expect(row.get_by_test_id("not-started")).to_have_text("0")
        first = teacher.get_by_test_id("mistake-row").first
        expect(first).to_have_attribute("data-finding-id", "clip_without_unscale")
        expect(
            teacher.locator('[data-testid="mistake-chart"] [data-finding-id="clip_without_unscale"] .bar')
        ).to_be_visible()
        example = first.get_by_test_id("mistake-example")
        expect(example).to_contain_text("bob")
        screenshot(teacher, "20-dashboard", full_page=True)

        gradebook = teacher.request.get(teacher.get_by_test_id("gradebook-link").get_attribute("href"))
        assert gradebook.status == 200
        rows = list(csv.DictReader(io.StringIO(gradebook.text())))
        assert {r["username"] for r in rows} == {"ada", "bob"}
        by_name = {r["username"]: r for r in rows}
        assert by_name["ada"][f"{LESSON} best score"] == "1.0000" and by_name["ada"][f"{LESSON} passed at"]
        assert by_name["bob"][f"{LESSON} passed at"] == ""

        example.click()  # the example submission: bob's code, highlighted, with its verdict
        expect(teacher.get_by_test_id("result-status")).to_have_attribute("data-status", "fail")
        expect(teacher.locator(".code-card")).to_contain_text("clip_grad_norm_")

        teacher.goto(dashboard)
        teacher.locator('.lang-switch button[value="it"]').click()
        expect(teacher.locator("html")).to_have_attribute("lang", "it")
        catalog = json.loads((ROOT / "webapp" / "translations" / "it.json").read_text(encoding="utf-8"))
        text = " ".join(teacher.locator("body").inner_text().split()).lower()  # table heads are in capitals
        left = [
            e
            for e, it in catalog.items()
            if " " in e and e != it and not re.search(r"\{\w+\}", e) and e.lower() in text
        ]
        assert not left, left
        assert catalog["The class's mistakes"].lower() in text and catalog["Median time to pass"].lower() in text
        screenshot(teacher, "21-dashboard-italian", full_page=True)

        assert not js_errors, js_errors

        response = ada.goto(dashboard)  # (the browser logs the 403 itself as a console error)
        assert response.status in (403, 404), response.status
        response = ada.goto(dashboard + "/gradebook.csv")
        assert response.status in (403, 404), response.status
    finally:
        for page in (teacher, ada, bob):
            page.context.close()

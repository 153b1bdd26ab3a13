"""Counts on the pages, in a real browser, in Italian and Indonesian: the learner's course list ("0 lezioni
superate su 2", then "1 lezione superata su 2" after one pass) and the instructor's course list and dashboard
("1 studente", then "2 studenti" once a second learner joins). The expected words are read from the web app's
catalogs (webapp/translations/), with the plural form CLDR gives each count: Italian has a form for one and
another for the rest (0 included); Indonesian has one form for every count. One grading in all."""

from __future__ import annotations

import json
import uuid

import pytest
from playwright.sync_api import expect

from grader.lesson.loader import load_exercise

from .amp_dojo_live import ROOT
from .conftest import DESKTOP
from .test_browser import GRADING_TIMEOUT_MS
from .test_classroom import LESSON, create_course, create_instructor, sign_in, sign_up_and_join, submit_from_the_course
from .test_phone_layout import choose_language

CATALOGS = ROOT / "webapp" / "translations"
LANGS = ["it", "id"]
PASSED = "{n} of {total} lessons passed"
LEARNERS = "{n} learners"


def expected(lang: str, key: str, form: str, **values) -> str:
    """The catalog's words for `key` in its plural `form` ("one" or "other"); an entry without plural forms is
    the same for every count."""
    entry = json.loads((CATALOGS / f"{lang}.json").read_text(encoding="utf-8"))[key]
    text = entry[form] if isinstance(entry, dict) else entry
    return text.format(**values)


def test_italian_has_two_forms_and_indonesian_one_for_these_counts():
    """What the browser test below relies on: otherwise it could pass with the wrong form."""
    for key in (PASSED, LEARNERS):
        assert expected("it", key, "one", n=1, total=2) != expected("it", key, "other", n=1, total=2)
        assert expected("id", key, "one", n=1, total=2) == expected("id", key, "other", n=1, total=2)


@pytest.fixture(scope="module")
def course(browser, live_app):
    """An instructor's course of two lessons with one learner who has passed nothing yet."""
    names = {"teacher": f"pt-{uuid.uuid4().hex[:8]}", "first": f"pa-{uuid.uuid4().hex[:8]}"}
    create_instructor(live_app, names["teacher"])
    context = browser.new_context(base_url=live_app.url, viewport=DESKTOP)
    try:
        teacher = context.new_page()
        teacher.set_default_timeout(15_000)
        sign_in(teacher, names["teacher"])
        names["dashboard"], names["code"] = create_course(teacher, "Plurals", [LESSON, "autocast"])
    finally:
        context.close()
    return names


def test_counts_take_the_plural_form_of_the_language(viewport_page, live_app, course, js_errors):
    teacher, first = viewport_page(DESKTOP), viewport_page(DESKTOP)
    sign_in(teacher, course["teacher"])
    sign_up_and_join(first, course["first"], course["code"])

    def learners_shown(lang: str, n: int, form: str) -> None:
        choose_language(teacher, lang)
        words = expected(lang, LEARNERS, form, n=n)
        teacher.goto(course["dashboard"])
        expect(teacher.get_by_test_id("learner-count")).to_have_text(words)
        teacher.goto("/courses")
        expect(teacher.locator("[data-testid=courses-taught] [data-testid=learner-count]")).to_have_text(words)

    def passed_shown(lang: str, n: int, form: str) -> None:
        choose_language(first, lang)
        first.goto("/courses")
        expect(first.get_by_test_id("lessons-passed")).to_have_text(expected(lang, PASSED, form, n=n, total=2))

    for lang in LANGS:
        learners_shown(lang, 1, "one")
        passed_shown(lang, 0, "other")  # zero is "other" in Italian: "0 lezioni superate su 2"

    first.goto("/courses")
    first.locator(".course-list a").first.click()
    submit_from_the_course(first, load_exercise(LESSON).reference)
    expect(first.get_by_test_id("result-status")).to_have_attribute("data-status", "pass", timeout=GRADING_TIMEOUT_MS)
    second = viewport_page(DESKTOP)
    sign_up_and_join(second, f"pb-{uuid.uuid4().hex[:8]}", course["code"])

    for lang in LANGS:
        passed_shown(lang, 1, "one")
        learners_shown(lang, 2, "other")
    assert not js_errors, js_errors

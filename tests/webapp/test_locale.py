"""Pages write counts, dates and figures as their language does (Babel, through
webapp/i18n.py): "1 lezione superata su 2", "4 dic 2026, 13:27:41 UTC" and a
median of "2,5" on Italian pages, each in its own way in Indonesian."""

import csv
import io
import re

import pytest
from test_classroom import course, submit  # noqa: F401 (the fixture)
from webapp_testing import grade_as

PASSED = {"en": "1 of 2 lessons passed", "it": "1 lezione superata su 2", "id": "1 dari 2 pelajaran lulus"}
LEARNERS = {"en": "3 learners", "it": "3 studenti", "id": "3 pelajar"}
MOMENT = {
    "en": r"[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d:\d\d\W[AP]M UTC",
    "it": r"\d{1,2} [a-z]{3} \d{4}, \d\d:\d\d:\d\d UTC",
    "id": r"\d{1,2} [A-Z][a-z]{2} \d{4} \d\d\.\d\d\.\d\d UTC",
}


@pytest.mark.parametrize("lang", ["en", "it", "id"])
def test_a_learners_course_list_counts_passed_lessons_in_the_languages_plural(app, course, lang):  # noqa: F811
    ada = course["learners"]["ada"]
    grade_as(app, submit(ada), "pass")
    ada.set_cookie("lang", lang)
    assert PASSED[lang] in " ".join(ada.get("/courses").get_data(as_text=True).split())


@pytest.mark.parametrize("lang", ["en", "it", "id"])
def test_the_dashboard_counts_learners_and_dates_moments_in_the_pages_language(app, course, lang):  # noqa: F811
    teacher = course["teacher"]
    teacher.set_cookie("lang", lang)
    html = teacher.get(course["url"]).get_data(as_text=True)
    assert LEARNERS[lang] in " ".join(html.split())
    learner = teacher.get(re.search(r'href="(/teach/courses/\d+/learners/\d+)"', html).group(1))
    text = learner.get_data(as_text=True).replace("\u202f", " ").replace("\u00a0", " ")  # unbreakable spaces
    assert re.search(MOMENT[lang], text), lang


def gradebook(app, course, lang, style=None):  # noqa: F811
    ada = course["learners"]["ada"]
    grade_as(app, submit(ada), "fail", score=0.25)
    grade_as(app, submit(course["learners"]["bob"], lesson="autocast"), "fail", score=0.5)
    teacher = course["teacher"]
    teacher.set_cookie("lang", lang)
    query = f"?style={style}" if style else ""
    return teacher.get(course["url"] + "/gradebook.csv" + query).get_data(as_text=True)


@pytest.mark.parametrize("lang", ["it", "id"])
def test_the_gradebook_keeps_machine_names_and_suits_the_instructors_spreadsheet_by_default(app, course, lang):  # noqa: F811
    rows = list(csv.reader(io.StringIO(gradebook(app, course, lang)), delimiter=";"))
    assert rows[0][:2] == ["username", "grad_scaler best score"]  # what an LMS import maps, in every language
    assert rows[1][:2] == ["ada", "0,2500"]  # a decimal comma, which a semicolon keeps apart from the next cell


def test_the_instructor_picks_an_english_spreadsheets_separator_and_localized_names_on_an_italian_page(app, course):  # noqa: F811
    rows = list(csv.reader(io.StringIO(gradebook(app, course, "it", "comma"))))
    assert rows[1][:2] == ["ada", "0.2500"] and rows[0][0] == "username"
    localized = course["teacher"].get(course["url"] + "/gradebook.csv?style=comma&headers=localized")
    assert next(csv.reader(io.StringIO(localized.get_data(as_text=True))))[:2] == [
        "nome utente",
        "grad_scaler punteggio migliore",
    ]


@pytest.mark.parametrize(("lang", "picked"), [("en", "comma"), ("it", "semicolon"), ("id", "semicolon")])
def test_the_dashboards_gradebook_format_defaults_from_the_language(app, course, lang, picked):  # noqa: F811
    teacher = course["teacher"]
    teacher.set_cookie("lang", lang)
    html = teacher.get(course["url"]).get_data(as_text=True)
    assert re.search(rf'<option value="{picked}" selected>', html), lang


@pytest.mark.parametrize(
    ("lang", "comment"),
    [
        ("en", "# TODO: run the forward pass and the loss under torch.autocast"),
        ("it", "# TODO: esegui il forward pass e la loss dentro torch.autocast"),
        ("id", "# TODO: jalankan forward pass dan loss di dalam torch.autocast"),
    ],
)
def test_the_starter_comes_with_its_comments_in_the_pages_language(client, lang, comment):
    assert comment in client.get(f"/api/lessons/autocast?lang={lang}").get_json()["starter"]
    client.set_cookie("lang", lang)
    page = client.get("/lessons/autocast").get_data(as_text=True)
    assert comment in page
    others = {"en", "it", "id"} - {lang}
    assert not any("# TODO: " + {"en": "run", "it": "esegui", "id": "jalankan"}[o] in page for o in others)

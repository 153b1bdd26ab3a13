"""Every page has a way on: a page that is not there (a mistyped lesson, a classmate's submission, another
instructor's course), one that is not the reader's, and a server error are pages in the reader's language with
links back to the lessons; the API answers the same errors in JSON."""

import re

import pytest
from webapp_testing import csrf_headers, form, make_instructor, signin, signup

from webapp import i18n

ENGLISH = ("Not Found", "The requested URL was not found", "Internal Server Error", "Forbidden")


def in_language(client, lang: str):
    form(client, "/lang", {"lang": lang, "next": "/"})
    return client


def assert_a_page_with_a_way_on(response, lang: str, title: str, message: str, status: int):
    page = response.get_data(as_text=True)
    assert response.status_code == status
    assert response.mimetype == "text/html"
    assert f'<html lang="{lang}">' in page
    assert f"<h1>{i18n.gettext(title, lang)}</h1>" in page
    assert i18n.gettext(message, lang).replace("'", "&#39;") in page
    assert re.search(r'<a class="button primary" href="/" data-testid="error-lessons">', page)
    assert i18n.gettext("Back to the lessons", lang) in page
    assert not any(english in page for english in ENGLISH), page


@pytest.mark.parametrize("lang", ["it", "id"])
def test_a_mistyped_lesson_is_a_translated_404_page_with_a_link_to_the_lessons(client, lang):
    response = in_language(client, lang).get("/lessons/autocastt")
    assert_a_page_with_a_way_on(response, lang, "Not found", "There is nothing at this address.", 404)
    assert i18n.gettext("Error {status}", lang, status=404) in response.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/no/such/page", "/submissions/nope"])
def test_an_unknown_address_is_a_404_page_in_the_readers_language(client, path):
    response = client.get(path)
    assert_a_page_with_a_way_on(response, "en", "Not found", "There is nothing at this address.", 404)
    response = in_language(client, "id").get(path)
    assert_a_page_with_a_way_on(response, "id", "Not found", "There is nothing at this address.", 404)


def test_a_classmates_submission_link_is_a_translated_404_page(app, csrf):
    ada, bob = app.test_client(), app.test_client()
    signup(ada, "ada")
    signup(bob, "bob")
    code = "def train_step(*args):\n    return 0.0\n"
    sid = ada.post("/api/lessons/autocast/submissions", json={"code": code}, headers=csrf_headers(ada)).get_json()["id"]
    assert ada.get(f"/submissions/{sid}").status_code == 200
    response = in_language(bob, "it").get(f"/submissions/{sid}")
    assert_a_page_with_a_way_on(response, "it", "Not found", "There is nothing at this address.", 404)
    assert 'data-testid="error-courses"' in response.get_data(as_text=True)  # a signed-in reader: the courses too
    api = bob.get(f"/api/submissions/{sid}")
    assert api.status_code == 404 and api.mimetype == "application/json"


def test_another_instructors_course_and_a_learner_on_an_instructor_page_get_translated_pages(app):
    make_instructor(app, "teacher")
    make_instructor(app, "rival")
    teacher, rival, learner = app.test_client(), app.test_client(), app.test_client()
    signin(teacher, "teacher")
    signin(rival, "rival")
    signup(learner, "ada")
    data = {"name": "AMP 101", "lesson-autocast": "on", "position-autocast": "1"}
    url = form(teacher, "/teach/courses/new", data).headers["Location"]
    assert teacher.get(url).status_code == 200
    response = in_language(rival, "id").get(url)
    assert_a_page_with_a_way_on(response, "id", "Not found", "There is nothing at this address.", 404)
    response = in_language(learner, "it").get("/teach/settings")
    assert_a_page_with_a_way_on(response, "it", "Not allowed", "This page is not open to your account.", 403)


@pytest.mark.parametrize("lang", ["it", "id"])
def test_a_server_error_is_a_translated_500_page_not_a_traceback(make_app, lang):
    app = make_app(PROPAGATE_EXCEPTIONS=False)

    @app.get("/boom")
    def boom():
        raise RuntimeError("a bug in the app")

    client = in_language(app.test_client(), lang)
    response = client.get("/boom")
    assert_a_page_with_a_way_on(
        response,
        lang,
        "Something went wrong",
        "The server could not answer this request. Try again; if it happens again, tell your instructor.",
        500,
    )
    assert "a bug in the app" not in response.get_data(as_text=True)


def test_a_wrong_method_on_a_page_is_a_translated_405_that_names_the_allowed_methods(client):
    response = in_language(client, "it").delete("/lessons/autocast")
    assert_a_page_with_a_way_on(
        response, "it", "Not allowed", "This address does not answer this kind of request.", 405
    )
    assert "GET" in response.headers["Allow"]


def test_the_api_keeps_answering_its_errors_in_json(client):
    in_language(client, "it")
    for path in ("/api/nope", "/api/lessons/nope", "/api/submissions/nope"):
        response = client.get(path)
        assert response.status_code == 404 and response.mimetype == "application/json", path
        assert isinstance(response.get_json()["error"], str), path
    response = client.delete("/api/lessons")
    assert response.status_code == 405 and response.mimetype == "application/json"
    assert "GET" in response.headers["Allow"]

"""Every number in a path (<int:...>: a course, a learner, a quiz question) is one the database can hold:
anything else (2**63 and up, negative, a thousand digits, non-ASCII digits) is a 404 like any unknown path,
JSON under /api, on either database, never the 500 of SQLite's integer overflow."""

import re

import pytest
from webapp_testing import csrf_headers, make_instructor, signin

OUT_OF_RANGE = [str(2**63), str(2**64), "9" * 20, "9" * 5000, "-1", "-9223372036854775809", "1e3", "0x10", "１"]
ROUTES = [
    ("GET", "/courses/{id}"),
    ("GET", "/teach/courses/{id}"),
    ("GET", "/teach/courses/{id}/gradebook.csv"),
    ("GET", "/teach/courses/{id}/learners/1"),
    ("GET", "/teach/courses/1/learners/{id}"),
    ("GET", "/teach/courses/{id}/edit"),
    ("POST", "/teach/courses/{id}/delete"),
    ("POST", "/teach/courses/{id}/learners/1/remove"),
    ("POST", "/teach/courses/1/learners/{id}/remove"),
    ("POST", "/teach/courses/{id}/learners/1/reset-link"),
    ("POST", "/teach/courses/1/learners/{id}/reset-link"),
    ("GET", "/teach/courses/{id}/submissions/<sid>"),
    ("POST", "/api/quiz/autocast/{id}"),
    ("POST", "/account/tokens/{id}/revoke"),
    ("POST", "/teach/courses/{id}/late-policy"),
    ("POST", "/teach/courses/{id}/learners/1/extensions"),
    ("POST", "/teach/courses/1/learners/{id}/extensions"),
    ("GET", "/teach/courses/{id}/roster"),
    ("GET", "/teach/courses/{id}/similarity"),
    ("POST", "/teach/courses/{id}/similarity/<lesson>"),
    ("GET", "/teach/courses/{id}/similarity/<lesson>/<a>/<b>"),
    ("GET", "/teach/courses/{id}/lti"),
    ("POST", "/teach/courses/{id}/lti/resend"),
    ("POST", "/teach/courses/{id}/lti/roster"),
    ("GET", "/teach/courses/{id}/regrades"),
    ("POST", "/teach/courses/{id}/regrades"),
    ("GET", "/teach/courses/{id}/regrades/1"),
    ("GET", "/teach/courses/1/regrades/{id}"),
    ("POST", "/teach/courses/{id}/regrades/1/cancel"),
    ("POST", "/teach/courses/1/regrades/{id}/cancel"),
    ("POST", "/teach/courses/{id}/regrades/1/apply"),
    ("POST", "/teach/courses/1/regrades/{id}/apply"),
    ("GET", "/teach/courses/{id}/exam"),
    ("POST", "/teach/courses/{id}/exam"),
]


@pytest.fixture
def teacher(app):
    make_instructor(app, "teacher")
    client = app.test_client()
    signin(client, "teacher")
    return client


def _open(client, method: str, url: str):
    return client.open(url, method=method, json={"choice": 0}, headers=csrf_headers(client))


def test_every_int_route_is_in_the_table(app):
    """A route added with an <int:...> part is tested here too."""
    rules = {
        re.sub(r"<int:\w+>", "{id}", r.rule).replace("<lesson_id>", "autocast")
        for r in app.url_map.iter_rules()
        if "<int:" in r.rule
    }
    assert rules == {
        url.replace("/learners/1", "/learners/{id}")
        .replace("/regrades/1", "/regrades/{id}")
        .replace("/courses/1/", "/courses/{id}/")
        for _m, url in ROUTES
    }


@pytest.mark.parametrize("method,url", ROUTES)
def test_an_out_of_range_id_in_any_route_is_a_404_never_a_500(teacher, method, url):
    for value in OUT_OF_RANGE:
        response = _open(teacher, method, url.format(id=value))
        assert response.status_code == 404, (url, value[:30], response.status_code)
        if url.startswith("/api/"):
            assert response.is_json and response.get_json()["error"]
    largest = _open(teacher, method, url.format(id=2**63 - 1))  # the largest the database holds: looked up
    assert largest.status_code == 404 or (url.startswith("/api/") and largest.status_code == 400)

"""Two `amp-dojo serve` processes on one PostgreSQL database, as two app servers
on two machines behind one address would be: either one serves the same
learners (accounts, sessions, submissions), and the limits that used to be
counted per process (open result streams, failed sign-ins) hold across both."""

import re

import pytest
import requests
from e2e.amp_dojo_live import LiveApp

pytestmark = pytest.mark.slow
PASSWORD = "correct-horse-battery"


@pytest.fixture
def two_apps(tmp_path, postgres_database):
    shared = {
        "DATABASE": postgres_database,
        "QUEUE_URL": f"sqlite:///{tmp_path / 'queue.sqlite3'}",
        "SECRET_KEY": "shared-by-both-processes",
        "MAX_STREAMS_PER_LEARNER": 1,
        "STREAM_SECONDS": 30,
        "LOGIN_FAILURES_PER_ACCOUNT": 2,
        "SANDBOX": "local",
        "ALLOW_LOCAL_SANDBOX": True,
    }
    apps = [LiveApp(tmp_path / name, settings=shared, workers=0, sandbox="local") for name in ("a", "b")]
    try:
        for app in apps:
            app.start(timeout=90)
        yield apps
    finally:
        for app in apps:
            app.stop()


def token(session: requests.Session, base: str) -> str:
    return session.get(base + "/api/session", timeout=10).json()["csrf_token"]


def post_form(session, base, path, data):
    return session.post(
        base + path, data={"csrf_token": token(session, base), **data}, allow_redirects=False, timeout=30
    )


def test_two_app_processes_on_one_postgresql_serve_the_same_learners(two_apps):
    a, b = (app.url for app in two_apps)
    browser = requests.Session()
    signed_up = post_form(browser, a, "/signup", {"username": "ada", "password": PASSWORD, "password2": PASSWORD})
    assert signed_up.status_code == 303, signed_up.text[:300]
    sid = browser.post(
        a + "/api/lessons/autocast/submissions",
        json={"code": "x = 1"},
        headers={"X-CSRF-Token": token(browser, a)},
        timeout=30,
    ).json()["id"]
    # The same cookie on the other process: the same account, the same submission.
    assert 'data-testid="signed-in-as">ada<' in browser.get(b + "/", timeout=10).text
    assert browser.get(f"{b}/api/submissions/{sid}", timeout=10).json()["code"] == "x = 1"
    other = requests.Session()
    assert post_form(other, b, "/signin", {"username": "ada", "password": PASSWORD}).status_code == 303
    assert [s["id"] for s in other.get(b + "/api/lessons/autocast/submissions", timeout=10).json()["submissions"]] == [
        sid
    ]

    # One open stream per learner, whichever process holds it.
    held = browser.get(f"{a}/api/submissions/{sid}/stream", stream=True, timeout=30)
    try:
        assert held.status_code == 200
        refused = browser.get(f"{b}/api/submissions/{sid}/stream", stream=True, timeout=30)
        assert refused.status_code == 429 and refused.headers["Retry-After"]
        refused.close()
    finally:
        held.close()

    # Failed sign-ins counted on one process limit the other.
    guesser = requests.Session()
    for base in (a, b):
        assert post_form(guesser, base, "/signin", {"username": "ada", "password": "guess"}).status_code == 401
    limited = post_form(guesser, a, "/signin", {"username": "ada", "password": PASSWORD})
    assert limited.status_code == 429 and re.fullmatch(r"\d+", limited.headers["Retry-After"])

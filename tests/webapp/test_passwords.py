"""Passwords after sign-up (webapp/passwords.py): a signed-in person changes theirs; a reset link, from an
instructor for a learner of their course, from `amp-dojo reset-password`, or mailed by "forgot password"
through a real SMTP server on loopback (aiosmtpd), works once, expires, cannot be altered, and dies when the
password changes; "forgot password" answers alike for every name and is rate-limited."""

import email
import email.policy
import re
import socket
import time

import pytest
from click.testing import CliRunner
from webapp_testing import PASSWORD, form, make_instructor, signin, signup

NEW = "a-new-password-42"


def signed_in_as(client) -> str | None:
    page = client.get("/").get_data(as_text=True)
    found = re.search(r'data-testid="signed-in-as">([^<]*)<', page)
    return found.group(1) if found else None


def user_id(app, name: str) -> int:
    from webapp import accounts
    from webapp.db import connect

    db = connect(app.config["DATABASE"])
    try:
        return accounts.by_username(db, name).id
    finally:
        db.close()


def course_with(app, teacher_name: str, learners: tuple[str, ...]) -> tuple:
    """An instructor (signed in) and their course, which these learners (signed in) joined."""
    make_instructor(app, teacher_name)
    teacher = app.test_client()
    signin(teacher, teacher_name)
    created = form(teacher, "/teach/courses/new", {"name": "AMP", "lesson-autocast": "on", "position-autocast": "1"})
    url = created.headers["Location"]
    code = re.search(r'data-testid="join-code-value">(\w+)<', teacher.get(url).get_data(as_text=True)).group(1)
    clients = {}
    for name in learners:
        clients[name] = app.test_client()
        signup(clients[name], name)
        assert form(clients[name], "/courses/join", {"code": code}).status_code == 303
    return teacher, int(url.rstrip("/").rsplit("/", 1)[1]), clients


def issue(teacher, course_id: int, learner_id: int):
    return form(teacher, f"/teach/courses/{course_id}/learners/{learner_id}/reset-link", {})


def link_path(page: str) -> str:
    return re.search(r"(/reset-password/[\w.-]+)", page).group(1)


def use(app, link: str, password: str = NEW, client=None):
    """Sets the password with the link in a fresh browser (or `client`): the POST's response."""
    client = client or app.test_client()
    return form(client, link, {"password": password, "password2": password})


def test_a_signed_in_user_changes_their_password_and_their_other_sessions_end(app):
    here, elsewhere = app.test_client(), app.test_client()
    signup(here, "ada")
    signin(elsewhere, "ada")
    change = {"current_password": PASSWORD, "password": NEW, "password2": NEW}
    assert form(here, "/account/password", {**change, "current_password": "wrong-one-1"}).status_code == 401
    assert form(here, "/account/password", {**change, "password2": NEW + "x"}).status_code == 400
    assert form(here, "/account/password", {**change, "password": "short", "password2": "short"}).status_code == 400
    assert signin(app.test_client(), "ada").status_code == 303  # nothing changed yet
    assert here.post("/account/password", data=change).status_code == 403  # no CSRF token
    response = form(here, "/account/password", change)
    assert response.status_code == 303 and "password is changed" in here.get("/account").get_data(as_text=True)
    assert signed_in_as(here) == "ada" and signed_in_as(elsewhere) is None
    assert signin(app.test_client(), "ada").status_code == 401
    assert signin(app.test_client(), "ada", NEW).status_code == 303


def test_guessing_the_current_password_is_limited_like_sign_in(make_app):
    app = make_app(LOGIN_FAILURES_PER_ACCOUNT=2)
    client = app.test_client()
    signup(client, "ada")
    guess = {"current_password": "wrong-one-1", "password": NEW, "password2": NEW}
    assert [form(client, "/account/password", guess).status_code for _ in range(3)] == [401, 401, 429]
    assert signin(app.test_client(), "ada").status_code == 429  # the same counter as the sign-in page's


def test_a_reset_link_from_the_instructor_works_once_and_ends_the_learners_sessions(app):
    teacher, course_id, learners = course_with(app, "teacher", ("ada",))
    page = issue(teacher, course_id, user_id(app, "ada"))
    assert page.status_code == 200
    link = link_path(page.get_data(as_text=True))
    browser = app.test_client()
    assert browser.get(link).status_code == 200
    assert signin(app.test_client(), "ada").status_code == 303  # the old password works until the link is used
    response = use(app, link, client=browser)
    assert response.status_code == 303 and signed_in_as(browser) == "ada"
    assert signed_in_as(learners["ada"]) is None
    assert signin(app.test_client(), "ada", NEW).status_code == 303
    assert app.test_client().get(link).status_code == 410
    assert use(app, link, "another-password-7").status_code == 410
    assert signin(app.test_client(), "ada", "another-password-7").status_code == 401


def test_an_expired_link_is_refused(make_app, monkeypatch):
    from itsdangerous import TimestampSigner

    from webapp.db import get_db
    from webapp.passwords import reset_token

    app = make_app(PASSWORD_RESET_MAX_AGE_S=3600)
    signup(app.test_client(), "ada")
    made = TimestampSigner.get_timestamp

    def link_made_ago(seconds: int) -> str:
        with monkeypatch.context() as m, app.app_context():
            m.setattr(TimestampSigner, "get_timestamp", lambda self: made(self) - seconds)
            return f"/reset-password/{reset_token(get_db(), app.config, user_id(app, 'ada'))}"

    stale, fresh = link_made_ago(3602), link_made_ago(3500)
    assert app.test_client().get(stale).status_code == 410
    assert use(app, stale).status_code == 410
    assert use(app, fresh).status_code == 303


def test_an_altered_or_forged_link_is_refused(app):
    from itsdangerous import URLSafeTimedSerializer

    from webapp.passwords import SALT

    teacher, course_id, _ = course_with(app, "teacher", ("ada", "bob"))
    link = link_path(issue(teacher, course_id, user_id(app, "ada")).get_data(as_text=True))
    token = link.rsplit("/", 1)[1]
    payload, stamp, signature = token.split(".")
    other = "B" if signature[0] != "B" else "C"
    forged_key = URLSafeTimedSerializer("not-the-key", salt=SALT).dumps([user_id(app, "bob"), "0" * 32])
    bob_payload = URLSafeTimedSerializer("any key", salt=SALT).dumps([user_id(app, "bob"), "0" * 32])
    altered = [
        f"{payload}.{stamp}.{other}{signature[1:]}",
        f"{payload[:-2]}AA.{stamp}.{signature}",
        f"{bob_payload.split('.')[0]}.{stamp}.{signature}",
        forged_key,
        "not-a-token",
    ]
    for bad in altered:
        assert app.test_client().get(f"/reset-password/{bad}").status_code == 410, bad
        assert use(app, f"/reset-password/{bad}").status_code == 410, bad
    assert signin(app.test_client(), "ada").status_code == 303 and signin(app.test_client(), "bob").status_code == 303


def test_a_link_dies_when_the_password_changes_and_using_one_spends_the_others(app):
    teacher, course_id, learners = course_with(app, "teacher", ("ada",))
    first, second, third = (
        link_path(issue(teacher, course_id, user_id(app, "ada")).get_data(as_text=True)) for _ in range(3)
    )
    change = {"current_password": PASSWORD, "password": NEW, "password2": NEW}
    assert form(learners["ada"], "/account/password", change).status_code == 303
    assert app.test_client().get(first).status_code == 410
    later = link_path(issue(teacher, course_id, user_id(app, "ada")).get_data(as_text=True))
    assert use(app, later, "third-password-3").status_code == 303
    assert use(app, second).status_code == 410 and use(app, third).status_code == 410


def test_an_instructor_issues_links_only_for_learners_of_their_own_courses(app):
    teacher, course_id, learners = course_with(app, "teacher", ("ada",))
    other, other_course, _ = course_with(app, "other", ("bob",))
    signup(app.test_client(), "cyd")  # in no course
    assert issue(teacher, course_id, user_id(app, "bob")).status_code == 404  # another course's learner
    assert issue(teacher, other_course, user_id(app, "bob")).status_code == 404  # a course it does not teach
    assert issue(teacher, course_id, user_id(app, "cyd")).status_code == 404
    assert issue(teacher, course_id, user_id(app, "other")).status_code == 404  # an instructor
    assert issue(teacher, course_id, user_id(app, "teacher")).status_code == 404
    assert issue(learners["ada"], course_id, user_id(app, "ada")).status_code == 403  # a learner issues none
    assert issue(app.test_client(), course_id, user_id(app, "ada")).status_code == 302  # sign in first
    assert teacher.post(f"/teach/courses/{course_id}/learners/{user_id(app, 'ada')}/reset-link").status_code == 403


def test_the_cli_prints_a_link_that_sets_any_accounts_password(app, monkeypatch):
    from webapp import cli

    make_instructor(app, "hamming")
    for key in ("DATABASE", "QUEUE_URL", "SECRET_KEY"):
        monkeypatch.setenv(f"AMP_DOJO_{key}", app.config[key])
    monkeypatch.setenv("AMP_DOJO_PUBLIC_URL", "https://dojo.example.edu/")
    monkeypatch.delenv("AMP_DOJO_CONFIG", raising=False)
    result = CliRunner().invoke(cli.main, ["reset-password", "HAMMING"])
    assert result.exit_code == 0, result.output
    link = result.stdout.strip()
    assert link.startswith("https://dojo.example.edu/reset-password/")
    assert use(app, link.removeprefix("https://dojo.example.edu")).status_code == 303
    assert signin(app.test_client(), "hamming", NEW).status_code == 303
    unknown = CliRunner().invoke(cli.main, ["reset-password", "nobody"])
    assert unknown.exit_code == 1 and "no account" in unknown.output


# ---------- forgot password, with mail through a real SMTP server ----------


class Inbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(envelope)
        return "250 OK"

    def wait(self, count: int, timeout: float = 10.0) -> list:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.messages


@pytest.fixture
def smtp():
    """An SMTP server on loopback (aiosmtpd), its received messages in .handler."""
    from aiosmtpd.controller import Controller

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(Inbox(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()


@pytest.fixture
def mailing_app(make_app, smtp):
    return make_app(
        SMTP_HOST="127.0.0.1",
        SMTP_PORT=smtp.port,
        SMTP_STARTTLS=False,
        SMTP_FROM="dojo@example.edu",
        PUBLIC_URL="http://dojo.example.edu",
    )


def set_email(client, email: str):
    return form(client, "/account/email", {"email": email, "current_password": PASSWORD})


def forgot(client, name: str):
    return form(client, "/forgot-password", {"username": name})


def answer(response) -> str:
    """The page's words, without what differs per request (the CSRF token)."""
    return re.sub(r'(name="csrf_token" value="|name="csrf-token" content=")[^"]*', "", response.get_data(as_text=True))


def test_forgot_password_mails_a_working_link_and_answers_alike_for_any_name(mailing_app, smtp):
    ada = mailing_app.test_client()
    signup(ada, "ada")
    assert set_email(ada, "not an address").status_code == 400
    assert set_email(ada, "ada@example.org").status_code == 303
    signup(mailing_app.test_client(), "bob")  # no address
    browser = mailing_app.test_client()
    answers = [forgot(browser, name) for name in ("ADA", "bob", "nobody")]
    assert {r.status_code for r in answers} == {200} and len({answer(r) for r in answers}) == 1
    assert "on its way" in answer(answers[0])
    (mail,) = smtp.handler.wait(1)
    assert mail.rcpt_tos == ["ada@example.org"] and mail.mail_from == "dojo@example.edu"
    message = email.message_from_bytes(mail.content, policy=email.policy.default)
    assert message["Subject"] == "Your AMP Dojo password"
    text = message.get_content()
    link = re.search(r"http://dojo\.example\.edu(/reset-password/[\w.-]+)", text).group(1)
    time.sleep(0.5)
    assert len(smtp.handler.messages) == 1  # bob has no address, nobody no account
    assert use(mailing_app, link).status_code == 303
    assert use(mailing_app, link, "another-password-7").status_code == 410
    assert signin(mailing_app.test_client(), "ada", NEW).status_code == 303


def test_forgot_password_is_rate_limited_per_name_and_address_whether_or_not_the_account_exists(make_app, smtp):
    app = make_app(
        SMTP_HOST="127.0.0.1", SMTP_PORT=smtp.port, SMTP_STARTTLS=False, PUBLIC_URL="http://x", RESET_MAILS_PER_NAME=2
    )
    ada = app.test_client()
    signup(ada, "ada")
    assert set_email(ada, "ada@example.org").status_code == 303
    for name in ("ada", "nobody"):
        statuses = [forgot(app.test_client(), name).status_code for _ in range(3)]
        assert statuses == [200, 200, 429], name
    assert len(smtp.handler.wait(2)) == 2  # two mails to ada, then none
    busy = forgot(app.test_client(), "ada")
    assert busy.status_code == 429 and int(busy.headers["Retry-After"]) > 0


def test_without_smtp_forgot_password_says_to_ask_the_instructor_and_opens_with_anonymous_use_off(make_app):
    app = make_app(ANONYMOUS_USE=False, SMTP_HOST="127.0.0.1")  # a server but no PUBLIC_URL: no mail
    client = app.test_client()
    signup(app.test_client(), "ada")
    for response in (client.get("/forgot-password"), forgot(client, "ada")):
        assert response.status_code == 200
        assert 'data-testid="ask-instructor"' in response.get_data(as_text=True)
    assert 'href="/forgot-password"' in client.get("/signin").get_data(as_text=True)
    teacher, course_id, _ = course_with(app, "teacher", ("bob",))
    link = link_path(issue(teacher, course_id, user_id(app, "bob")).get_data(as_text=True))
    assert client.get(link).status_code == 200 and client.get("/courses").status_code == 302
    assert use(app, link, client=client).status_code == 303 and signed_in_as(client) == "bob"

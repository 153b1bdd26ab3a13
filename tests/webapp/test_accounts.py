"""Accounts: sign-up keeps anonymous work, sign-in limits and answers that give
no user away, sign-out ends every session, cookie flags, CSRF on the forms,
the create-instructor command, and the switch that turns anonymous use off."""

import pytest
from click.testing import CliRunner

from grader.loader import load_exercise
from webapp_testing import PASSWORD, csrf_headers, form, make_instructor, signin, signup

STARTER = load_exercise("autocast").starter


def submit(client, code=STARTER, lesson="autocast"):
    return client.post(f"/api/lessons/{lesson}/submissions", json={"code": code}, headers=csrf_headers(client))


def signed_in_as(client) -> str | None:
    page = client.get("/").get_data(as_text=True)
    if 'data-testid="signed-in-as"' not in page:
        return None
    return page.split('data-testid="signed-in-as">', 1)[1].split("<", 1)[0]


def test_signing_up_keeps_the_browsers_anonymous_submissions_and_an_old_cookie_loses_them(app):
    browser = app.test_client()
    sid = submit(browser).get_json()["id"]
    with browser.session_transaction() as session:
        anonymous = dict(session)
    copy = app.test_client()  # someone holding a copy of the cookie from before the sign-up
    with copy.session_transaction() as session:
        session.update(anonymous)
    assert copy.get(f"/api/submissions/{sid}").status_code == 200
    signup(browser, "ada")
    assert signed_in_as(browser) == "ada"
    listed = browser.get("/api/lessons/autocast/submissions").get_json()["submissions"]
    assert [s["id"] for s in listed] == [sid]
    assert copy.get(f"/api/submissions/{sid}").status_code == 404
    elsewhere = app.test_client()  # the same account on another computer
    signin(elsewhere, "Ada")  # usernames are not case-sensitive
    assert elsewhere.get(f"/api/submissions/{sid}").status_code == 200
    assert {c["id"]: c["progress"] for c in elsewhere.get("/api/lessons").get_json()["lessons"]}["autocast"] == \
        "attempted"


def test_a_taken_or_malformed_username_is_refused_with_the_reason(app):
    signup(app.test_client(), "grace")
    for name, words in (("GRACE", "taken"), ("<b>x</b>", "3 to 32"), ("ab", "3 to 32")):
        other = app.test_client()
        response = form(other, "/signup", {"username": name, "password": PASSWORD, "password2": PASSWORD})
        assert response.status_code == 400 and words in response.get_data(as_text=True)
        assert "&lt;b&gt;x&lt;/b&gt;" in response.get_data(as_text=True) or name != "<b>x</b>"
    short = form(app.test_client(), "/signup", {"username": "linus", "password": "short", "password2": "short"})
    assert short.status_code == 400 and "8 to 256" in short.get_data(as_text=True)


def test_a_wrong_password_and_an_unknown_name_get_the_same_answer_then_a_limit(make_app):
    app = make_app(LOGIN_FAILURES_PER_ACCOUNT=3)
    signup(app.test_client(), "hopper")
    client = app.test_client()
    wrong = signin(client, "hopper", "not-the-password")
    unknown = signin(client, "nobody-here", "not-the-password")
    assert wrong.status_code == unknown.status_code == 401
    message = "Wrong username or password."
    assert message in wrong.get_data(as_text=True) and message in unknown.get_data(as_text=True)
    for _ in range(2):
        assert signin(client, "hopper", "still-wrong").status_code == 401
    limited = signin(client, "hopper", PASSWORD)  # even the right password waits now
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    assert signed_in_as(client) is None
    assert signin(client, "nobody-here", "x").status_code == 401  # another name from this address: not yet limited


def test_signing_out_ends_every_session_of_the_account(app):
    first, second = app.test_client(), app.test_client()
    signup(first, "turing")
    signin(second, "turing")
    assert signed_in_as(second) == "turing"
    with first.session_transaction() as session:
        stolen = dict(session)
    assert form(first, "/signout", {}).status_code == 303
    assert signed_in_as(first) is None and signed_in_as(second) is None
    replay = app.test_client()
    with replay.session_transaction() as session:
        session.update(stolen)
    assert signed_in_as(replay) is None


def test_account_forms_need_the_sessions_csrf_token(app):
    client = app.test_client()
    signup(client, "lovelace")
    assert client.post("/signout", data={}).status_code == 403
    assert client.post("/signin", data={"username": "lovelace", "password": PASSWORD}).status_code == 403
    assert signed_in_as(client) == "lovelace"


def test_the_session_cookie_is_httponly_samesite_and_secure_over_https(app):
    plain = app.test_client()
    signup(plain, "knuth")
    cookie = plain.get_cookie("session")
    assert cookie.http_only and cookie.same_site == "Lax" and not cookie.secure
    https = app.test_client()
    response = https.get("/api/session", base_url="https://localhost")
    assert "Secure" in response.headers["Set-Cookie"] and "HttpOnly" in response.headers["Set-Cookie"]


def test_create_instructor_reads_the_password_from_stdin_and_the_account_can_sign_in(app, monkeypatch):
    from webapp import cli

    for key in ("DATABASE", "QUEUE_URL", "SECRET_KEY"):
        monkeypatch.setenv(f"AMP_DOJO_{key}", app.config[key])
    monkeypatch.delenv("AMP_DOJO_CONFIG", raising=False)
    result = CliRunner().invoke(cli.main, ["create-instructor", "hamming", "--password-stdin"], input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    again = CliRunner().invoke(cli.main, ["create-instructor", "HAMMING", "--password-stdin"], input=PASSWORD + "\n")
    assert again.exit_code == 1 and "taken" in again.output
    client = app.test_client()
    assert signin(client, "hamming").status_code == 303
    assert client.get("/teach/courses/new").status_code == 200


@pytest.mark.parametrize("path", ["/", "/lessons/autocast", "/courses"])
def test_with_anonymous_use_off_a_visitor_is_sent_to_sign_in(app, path):
    make_instructor(app, "dijkstra")
    teacher = app.test_client()
    signin(teacher, "dijkstra")
    assert form(teacher, "/teach/settings", {}).status_code == 200  # the box left unticked: off
    visitor = app.test_client()
    response = visitor.get(path)
    assert response.status_code == 302 and response.headers["Location"].startswith("/signin")
    assert visitor.get("/signin").status_code == 200
    refused = submit(visitor)
    assert refused.status_code == 401 and refused.get_json()["error"]
    learner = app.test_client()
    signup(learner, "wirth")
    assert learner.get(path).status_code == 200 and submit(learner).status_code == 202
    form(teacher, "/teach/settings", {"anonymous_use": "on"})
    assert app.test_client().get(path).status_code in (200, 302) and app.test_client().get("/").status_code == 200


def test_a_nul_character_in_a_form_path_or_code_is_a_400_on_either_database(app):
    client = app.test_client()
    assert form(client, "/signin", {"username": "ada\x00", "password": PASSWORD}).status_code == 400
    assert client.get("/api/submissions/ab%00cd").status_code == 400
    assert submit(client, code="x = 1\x00\n").status_code == 400


MALFORMED_TOKENS = ["é", "ünïcödé-" * 8, "", " ", "a" * 100_000, ".", "x.y.z", "IjAi.Zm9v.YmFy", "\u2603", "%00",
                    "null", "0" * 64]


def _post(client, rule: str, token: str, where: str):
    url = rule.replace("<lesson_id>", "autocast").replace("<int:index>", "0").replace("<sid>", "abc")
    if where == "form":
        return client.post(url, data={"csrf_token": token, "username": "u", "choice": "0"})
    header = token.encode("utf-8").decode("latin-1")  # the bytes a client sends, as WSGI hands them on
    return client.post(url, json={"choice": 0, "code": "x = 1"}, headers={"X-CSRF-Token": header})


@pytest.mark.parametrize("where", ["header", "form"])
@pytest.mark.parametrize("signed_in", [False, True])
def test_any_malformed_csrf_token_on_any_post_route_is_a_403_never_a_500(app, where, signed_in):
    rules = sorted({r.rule for r in app.url_map.iter_rules() if "POST" in r.methods})
    assert len(rules) >= 8
    client = app.test_client()
    if signed_in:
        signup(client, "gosling")
    else:
        client.get("/")  # an anonymous session, with a token of its own
    other = app.test_client()
    stolen = csrf_headers(other)["X-CSRF-Token"]  # a real token, of another session
    with client.session_transaction() as session:
        raw = session.get("csrf_token", "")  # the session's raw token, unsigned
    for rule in rules:
        for token in MALFORMED_TOKENS + [stolen, raw]:
            response = _post(client, rule, token, where)
            assert response.status_code == 403, (rule, token[:20], response.status_code)
            assert "CSRF" in response.get_json()["error"]


def test_the_csrf_token_changes_on_sign_in_and_the_old_one_is_refused(app):
    signup(app.test_client(), "ritchie")
    client = app.test_client()
    before = csrf_headers(client)
    assert signin(client, "ritchie").status_code == 303
    after = csrf_headers(client)
    assert before != after
    assert client.post("/api/lessons/autocast/submissions", json={"code": STARTER}, headers=before).status_code == 403
    assert client.post("/api/lessons/autocast/submissions", json={"code": STARTER}, headers=after).status_code == 202
    page = client.get("/lessons/autocast").get_data(as_text=True)
    meta = page.split('<meta name="csrf-token" content="', 1)[1].split('"', 1)[0]
    assert client.post("/lang", data={"csrf_token": meta, "lang": "it"}).status_code in (302, 303)


def test_a_page_left_open_for_two_hours_can_still_post(app, monkeypatch):
    import time

    from itsdangerous.timed import TimestampSigner

    client = app.test_client()
    headers = csrf_headers(client)
    later = int(time.time()) + 7200
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: later)
    assert client.post("/api/lessons/autocast/submissions", json={"code": STARTER}, headers=headers).status_code == 202

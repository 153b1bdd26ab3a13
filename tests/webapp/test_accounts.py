"""Accounts: sign-up keeps anonymous work, sign-in limits and answers that give
no user away, sign-out ends every session, cookie flags, CSRF on the forms,
the create-instructor command, and the switch that turns anonymous use off."""

import re

import pytest
from click.testing import CliRunner
from webapp_testing import PASSWORD, csrf_headers, form, make_instructor, signin, signup

from grader.lesson.loader import load_exercise

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
    assert {c["id"]: c["progress"] for c in elsewhere.get("/api/lessons").get_json()["lessons"]}[
        "autocast"
    ] == "attempted"


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


def at_once(app, n: int, request) -> list[int]:
    """`request(client)` from n clients in n threads released together (a barrier), each with its own
    session; their status codes. Password hashing releases the GIL, so the requests really overlap."""
    import threading

    clients = [app.test_client() for _ in range(n)]
    tokens = [csrf_headers(c)["X-CSRF-Token"] for c in clients]
    barrier, codes = threading.Barrier(n), []

    def one(client, token):
        barrier.wait()
        codes.append(request(client, token))

    threads = [threading.Thread(target=one, args=pair) for pair in zip(clients, tokens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(codes)


def test_sixteen_wrong_guesses_sent_at_once_are_counted_as_sixteen_against_a_limit_of_five(make_app):
    app = make_app(LOGIN_FAILURES_PER_ACCOUNT=5)
    signup(app.test_client(), "liskov")
    codes = at_once(
        app,
        16,
        lambda client, token: (
            client.post(
                "/signin", data={"csrf_token": token, "username": "liskov", "password": "a-wrong-guess"}
            ).status_code
        ),
    )
    assert set(codes) <= {401, 429} and codes.count(401) <= 5 and codes.count(429) >= 11, codes
    assert signin(app.test_client(), "liskov").status_code == 429  # the right password waits too


def test_sixteen_sign_ups_sent_at_once_from_one_address_make_at_most_the_limit_of_accounts(make_app):
    app = make_app(SIGNUPS_PER_IP=5)
    names = iter(f"newcomer{n:02d}" for n in range(16))
    codes = at_once(
        app,
        16,
        lambda client, token: (
            client.post(
                "/signup",
                data={"csrf_token": token, "username": next(names), "password": PASSWORD, "password2": PASSWORD},
            ).status_code
        ),
    )
    assert codes.count(303) <= 5 and codes.count(429) >= 11, codes


def test_a_sign_up_for_a_taken_name_costs_no_password_hash_and_counts_toward_the_limit(make_app, monkeypatch):
    from webapp import accounts

    app = make_app(SIGNUPS_PER_IP=4)
    signup(app.test_client(), "hoare")
    hashed = []
    real = accounts.generate_password_hash
    monkeypatch.setattr(accounts, "generate_password_hash", lambda *a, **k: hashed.append(1) or real(*a, **k))
    client = app.test_client()
    for name in ("hoare", "HOARE", "h0are"):
        assert (
            form(client, "/signup", {"username": name, "password": PASSWORD, "password2": PASSWORD}).status_code == 400
        )
    assert hashed == []
    limited = form(client, "/signup", {"username": "dahl", "password": PASSWORD, "password2": PASSWORD})
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0 and hashed == []


def test_a_right_password_does_not_count_as_a_failure_from_its_address(make_app):
    app = make_app(LOGIN_FAILURES_PER_IP=3, LOGIN_FAILURES_PER_ACCOUNT=10)
    signup(app.test_client(), "milner")
    for _ in range(5):  # a class behind one address signing in rightly, more times than the address's limit
        assert signin(app.test_client(), "milner").status_code == 303
    assert signin(app.test_client(), "milner", "wrong-one").status_code == 401


@pytest.mark.parametrize("name", ["Knuth", "kNUTH", "knuth.", "k.nuth", "kn-uth", "k_n_u_t_h", "knu7h", "KNU-TH."])
def test_a_username_that_looks_like_a_taken_one_is_refused(app, name):
    signup(app.test_client(), "knuth")
    response = form(app.test_client(), "/signup", {"username": name, "password": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 400 and "taken" in response.get_data(as_text=True)


def test_look_alike_digits_and_letters_are_refused_and_sign_in_still_takes_the_exact_name(app):
    signup(app.test_client(), "admin_Ilya")
    for name in ("adm1n_ilya", "ADMIN-1LYA", "admin.lly4", "4dmin_i1ya", "admln.ilya"):
        response = form(app.test_client(), "/signup", {"username": name, "password": PASSWORD, "password2": PASSWORD})
        assert response.status_code == 400 and "looks too much like" in response.get_data(as_text=True), name
    assert signin(app.test_client(), "ADMIN_ilya").status_code == 303  # case-folded: the same account
    assert signin(app.test_client(), "adm1n_ilya").status_code == 401  # a look-alike is not the account
    signup(app.test_client(), "admiral")  # a different name is free


def test_the_username_skeleton_folds_look_alikes_and_separators():
    from webapp.accounts import username_skeleton

    assert username_skeleton("G.Hopper-") == username_skeleton("g_hopper") == username_skeleton("ghopper")
    assert username_skeleton("B0b5") == username_skeleton("bobs") == username_skeleton("8OBS")
    assert username_skeleton("l1Ii") == "llll" and username_skeleton("rnary") == username_skeleton("mary")
    assert username_skeleton("ada") != username_skeleton("eda")


MALFORMED_TOKENS = [
    "é",
    "ünïcödé-" * 8,
    "",
    " ",
    "a" * 100_000,
    ".",
    "x.y.z",
    "IjAi.Zm9v.YmFy",
    "\u2603",
    "%00",
    "null",
    "0" * 64,
]


def _post(client, rule: str, token: str, where: str):
    url = rule.replace("<lesson_id>", "autocast").replace("<int:index>", "0").replace("<sid>", "abc")
    url = re.sub(r"<(?:int:)?[a-z_]+>", "1", url)  # every other id (a course, a regrade, a learner ...)
    if where == "form":
        return client.post(url, data={"csrf_token": token, "username": "u", "choice": "0"})
    header = token.encode("utf-8").decode("latin-1")  # the bytes a client sends, as WSGI hands them on
    return client.post(url, json={"choice": 0, "code": "x = 1"}, headers={"X-CSRF-Token": header})


# The only POSTs without a CSRF token: an LMS sends them (webapp/lti; the id_token's signature, state and nonce
# protect them). Whatever else is exempt fails the test below.
CSRF_EXEMPT = {"/lti/login", "/lti/launch"}


@pytest.mark.parametrize("where", ["header", "form"])
@pytest.mark.parametrize("signed_in", [False, True])
def test_any_malformed_csrf_token_on_any_post_route_is_a_403_never_a_500(app, where, signed_in):
    rules = sorted({r.rule for r in app.url_map.iter_rules() if "POST" in r.methods} - CSRF_EXEMPT)
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


def test_wrong_guesses_at_made_up_names_never_refuse_a_right_password_from_the_same_address(make_app):
    app = make_app(LOGIN_FAILURES_PER_IP=20, LOGIN_FAILURES_PER_ACCOUNT=5)
    make_instructor(app, "teacher")
    signup(app.test_client(), "classmate")
    guesser = app.test_client()
    for n in range(30):  # a class behind one address: someone guesses at made-up names, past the address's limit
        assert signin(guesser, f"madeup{n:02d}", "a-wrong-guess").status_code == 401
    assert signin(guesser, "classmate", "a-wrong-guess").status_code == 401  # a real name's first guess: counted
    # past the address's limit each name gets one try: guessing again at a name already guessed at waits
    assert signin(guesser, "madeup00", "another-guess").status_code == 429
    assert signin(guesser, "classmate", "another-guess").status_code == 429
    teacher = app.test_client()  # the instructor, from the same address, whose name no one guessed at
    assert signin(teacher, "teacher").status_code == 303 and signed_in_as(teacher) == "teacher"


def test_a_username_guessed_at_from_many_addresses_gets_one_try_per_address(make_app):
    app = make_app(LOGIN_FAILURES_PER_NAME=6, LOGIN_FAILURES_PER_ACCOUNT=5, LOGIN_FAILURES_PER_IP=0)
    signup(app.test_client(), "turing")

    def from_address(address: str, password: str):
        return signin(app.test_client(), "turing", password, environ_base={"REMOTE_ADDR": address})

    for n in range(3):  # two guesses from each of three addresses: the name's limit of six is reached
        for _ in range(2):
            assert from_address(f"10.0.0.{n}", "a-wrong-guess").status_code == 401
    assert from_address("10.0.0.0", "a-third-guess").status_code == 429  # an address that guessed: refused
    assert from_address("10.0.1.1", "a-wrong-guess").status_code == 401  # a new address: one try ...
    assert from_address("10.0.1.1", "a-wrong-guess").status_code == 429  # ... only
    assert from_address("10.0.1.2", PASSWORD).status_code == 303  # the owner, from an address of their own

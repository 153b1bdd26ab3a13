"""LTI 1.3 against a real platform implementation (lti1p3platform, served on loopback by tests/webapp/lti_platform.py):
launches as learner and instructor, the checks a launch must pass, grades, deep links and the roster."""

from __future__ import annotations

import html
import os
import re
import threading
import time
from functools import lru_cache
from urllib.parse import urlsplit

import jwt
import pytest
import requests
from lti_platform import CLIENT_ID, DEPLOYMENT, ROLES, Lms, form_fields, new_key, query_of
from webapp_testing import base_config, csrf_headers, form, grade_as

from webapp import create_app
from webapp.db import connect


@pytest.fixture(scope="module")
def lms():
    platform = Lms().start()
    yield platform
    platform.stop()


@pytest.fixture(scope="module", autouse=True)
def one_tool_key():
    """Every app of this module signs with one key pair, made once (RSA key generation costs most of a second)."""
    from webapp.lti import keys

    pair = keys._new_pair()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(keys, "_new_pair", lambda: pair)
        yield


@pytest.fixture
def tool(tmp_path, lms):
    """The app (SQLite), with the platform registered and the platform knowing the tool's URLs and keys."""
    return registered(create_app(base_config(tmp_path)), lms)


@lru_cache(maxsize=1)
def _lessons():
    from grader.lesson.loader import load_all

    return load_all()


def registered(app, lms):
    app.extensions["amp_dojo_exercises"] = _lessons()  # read once for the module's apps, not once per app
    from webapp.lti import platforms

    with connect(app.config["DATABASE"]) as db:
        platforms.add(
            db, lms.url, CLIENT_ID, lms.url + "/authorize", lms.url + "/token", lms.url + "/jwks", [DEPLOYMENT]
        )
    client = app.test_client()
    lms.tool = {
        "login": "http://localhost/lti/login",
        "launch": "http://localhost/lti/launch",
        "jwks": client.get("/lti/jwks").get_json(),
    }
    lms.deployment = DEPLOYMENT
    return app


def start(client, lms, user, role="learner", lesson=None, deep_link=False) -> dict:
    """The login initiation, then the platform's authorization: the tool's redirect's parameters."""
    response = client.get(_path(lms.login_url(user, role, lesson, deep_link)))
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    assert response.headers["Location"].startswith(lms.url + "/authorize?")
    return query_of(response.headers["Location"])


def launch(client, lms, user, role="learner", lesson=None, deep_link=False, tamper=None, deployment=None, **claims):
    if deployment:
        claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] = deployment
    data = lms.id_token(start(client, lms, user, role, lesson, deep_link), **claims)
    token = tamper(data["id_token"]) if tamper else data["id_token"]
    return client.post("/lti/launch", data={"id_token": token, "state": data["state"]})


def _path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def test_a_learner_launch_signs_in_a_new_account_and_opens_the_linked_lesson(tool, lms):
    early = launch(tool.test_client(), lms, "student-0", "learner", lesson="autocast")
    assert early.status_code == 403  # no instructor has opened the tool in this course yet: no course to land in
    instructor = tool.test_client()
    opened = launch(instructor, lms, "teacher-1", "instructor", lesson="autocast")
    assert opened.status_code == 303 and opened.headers["Location"] == "/lessons/autocast"
    learner = tool.test_client()
    started = time.perf_counter()
    response = launch(learner, lms, "student-1", "learner", lesson="autocast")
    print(f"learner launch (login, authorization, launch): {(time.perf_counter() - started) * 1000:.0f} ms")
    assert response.status_code == 303 and response.headers["Location"] == "/lessons/autocast"
    assert learner.get("/api/me").get_json()["role"] == "learner"
    with connect(tool.config["DATABASE"]) as db:
        course = db.execute("SELECT c.* FROM courses c JOIN lti_contexts x ON x.course_id = c.id").fetchone()
        assert course["name"] == "Mixed precision 101"
        roles = db.execute(
            "SELECT u.role, u.email, (SELECT count(*) FROM enrollments e WHERE e.user_id = u.id) AS learns, "
            "(SELECT count(*) FROM course_instructors i WHERE i.user_id = u.id) AS teaches "
            "FROM lti_accounts a JOIN users u ON u.id = a.user_id ORDER BY a.sub"
        ).fetchall()
    assert [tuple(r) for r in roles] == [
        ("learner", "student-1@lms.example", 1, 0),
        ("instructor", "teacher-1@lms.example", 0, 1),
    ]
    again = launch(learner, lms, "student-1", "learner")  # the same account; no lesson named: the course page
    assert again.headers["Location"] == f"/courses/{course['id']}"


def test_a_launch_not_signed_by_the_platform_for_this_tool_or_already_used_is_refused(tool, lms):
    client = tool.test_client()
    data = lms.id_token(start(client, lms, "teacher-1", "instructor", lesson="autocast"))
    first = client.post("/lti/launch", data={"id_token": data["id_token"], "state": data["state"]})
    assert first.status_code == 303
    replay = client.post("/lti/launch", data={"id_token": data["id_token"], "state": data["state"]})
    assert replay.status_code == 401, "replayed nonce"
    other, _ = new_key()

    def resign(token):
        header = jwt.get_unverified_header(token)
        body = jwt.decode(token, options={"verify_signature": False})
        return jwt.encode(body, other, algorithm="RS256", headers={"kid": header["kid"]})

    mistakes = {
        "bad signature": lambda: launch(client, lms, "student-3", tamper=resign),
        "wrong audience": lambda: launch(client, lms, "student-3", aud="another-tool", azp="another-tool"),
        "expired": lambda: launch(client, lms, "student-3", expiration=-120),
        "unknown deployment": lambda: launch(client, lms, "student-3", deployment="deployment-unknown"),
    }
    for mistake, attempt in mistakes.items():
        assert attempt().status_code == 401, mistake
    with connect(tool.config["DATABASE"]) as db:
        assert db.execute("SELECT count(*) FROM lti_accounts").scalar() == 1  # the instructor only


def test_a_rotated_platform_key_is_fetched_once_and_the_removed_one_is_refused(tool, lms):
    client = tool.test_client()
    assert launch(client, lms, "teacher-1", "instructor").status_code == 303  # the first key set is cached
    old_key = lms.id_token(start(client, lms, "teacher-1", "instructor"))
    lms.rotate(keep_old=False)  # a new key, and the old one leaves the platform's key set
    assert launch(client, lms, "teacher-1", "instructor").status_code == 303  # new kid: the key set refetched
    refused = client.post("/lti/launch", data={"id_token": old_key["id_token"], "state": old_key["state"]})
    assert refused.status_code == 401


def _graded_pass(app, client, score: float = 1.0) -> None:
    """A submission of the signed-in learner, with a scripted verdict stored as a worker's would be."""
    response = client.post("/api/lessons/autocast/submissions", json={"code": "x = 1\n"}, headers=csrf_headers(client))
    assert response.status_code in (201, 202), response.get_json()
    grade_as(app, response.get_json()["id"], "pass" if score == 1.0 else "fail", score=score)


def test_a_graded_submission_reaches_the_gradebook_and_waits_while_the_lms_is_down(tool, lms):
    launch(tool.test_client(), lms, "teacher-1", "instructor", lesson="autocast")
    learner = tool.test_client()
    launch(learner, lms, "student-4", "learner", lesson="autocast")
    queue, before = tool.extensions["amp_dojo_lti_queue"], len(lms.scores)
    started = time.time()
    _graded_pass(tool, learner, 0.5)
    assert queue.run_pending() == 1
    sent = lms.scores[before:]
    print(f"verdict stored -> score at the platform: {(sent[-1]['received_at'] - started) * 1000:.0f} ms")
    assert [(s["userId"], s["scoreGiven"], s["scoreMaximum"]) for s in sent] == [("student-4", 0.5, 1)]
    assert lms.line_items[sent[0]["lineitem"]]["tag"] == "autocast"

    lms.down = True
    try:
        _graded_pass(tool, learner, 1.0)
        queue.run_pending()
        with connect(tool.config["DATABASE"]) as db:
            row = db.execute("SELECT state, tries, last_error FROM lti_scores").fetchone()
        assert row["state"] == "pending" and row["tries"] == 1 and "503" in row["last_error"]
        teacher = tool.test_client()
        launch(teacher, lms, "teacher-1", "instructor")
        assert f"/teach/courses/{_course_id(tool)}/lti" in teacher.get(f"/teach/courses/{_course_id(tool)}").text
        page = teacher.get(f"/teach/courses/{_course_id(tool)}/lti").get_data(as_text=True)
        assert "503" in page  # the instructor sees why the score is not there yet
    finally:
        lms.down = False
    queue.run_pending(now=time.time() + 60)  # the retry's time has come
    assert [(s["userId"], s["scoreGiven"]) for s in lms.scores[before:]] == [("student-4", 0.5), ("student-4", 1.0)]
    _graded_pass(tool, learner, 0.25)  # a worse one later: the best so far stays
    queue.run_pending()
    assert lms.scores[-1]["scoreGiven"] == 1.0


def test_a_submission_from_grader_submit_reaches_the_gradebook_as_one_from_the_browser(tool, lms):
    """One progress record: the learner who came from the LMS makes a token on their account page, and
    `grader submit`'s own client (grader.remote, urllib with the token) sends code to the tool on loopback."""
    from werkzeug.serving import make_server

    from grader import remote

    launch(tool.test_client(), lms, "teacher-1", "instructor", lesson="autocast")
    learner = tool.test_client()
    launch(learner, lms, "student-6", "learner", lesson="autocast")
    page = form(learner, "/account/tokens", {"name": "laptop", "days": ""}).get_data(as_text=True)
    token = re.search(r'data-testid="token-secret">(ampd_[\w-]+)<', page).group(1)
    server = make_server("127.0.0.1", 0, tool, threaded=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # its shutdown: 50 ms
    try:
        login = remote.Login(f"http://127.0.0.1:{server.server_port}", token)
        answer = remote.submit(login, "autocast", "x = 1\n", "en")
    finally:
        server.shutdown()
    grade_as(tool, answer["id"], "fail", score=0.75)
    tool.extensions["amp_dojo_lti_queue"].run_pending()
    assert [(s["userId"], s["scoreGiven"]) for s in lms.scores if s["userId"] == "student-6"] == [("student-6", 0.75)]


def test_the_platform_gets_the_score_the_courses_late_policy_counts(tool, lms):
    """The LMS's gradebook and the course's agree: a submission two days late under a penalty of 25% a day is
    sent as half its raw score, and an extension for this learner alone sends it whole."""
    from webapp import deadlines
    from webapp.late_policy import LatePolicy

    launch(tool.test_client(), lms, "teacher-1", "instructor", lesson="autocast")
    learner = tool.test_client()
    launch(learner, lms, "student-7", "learner", lesson="autocast")
    queue, course = tool.extensions["amp_dojo_lti_queue"], _course_id(tool)
    with connect(tool.config["DATABASE"]) as db:
        old = db.execute("SELECT deadline FROM course_lessons WHERE course_id = ? AND lesson = 'autocast'", (course,))
        old = old.scalar()
        db.execute(
            "UPDATE course_lessons SET deadline = ? WHERE course_id = ? AND lesson = 'autocast'",
            (time.time() - 1.5 * 86400, course),
        )
        deadlines.set_policy(db, course, LatePolicy("penalty", per_day=0.25, floor=0.1))
    try:
        queue.run_pending()
        _graded_pass(tool, learner, 1.0)
        queue.run_pending()
        assert [(s["userId"], s["scoreGiven"]) for s in lms.scores if s["userId"] == "student-7"] == [
            ("student-7", 0.5)
        ]
        with connect(tool.config["DATABASE"]) as db:
            user = db.execute(
                "SELECT user_id FROM lti_accounts a JOIN lti_platforms p ON p.id = a.platform_id "
                "WHERE a.sub = 'student-7'"
            ).scalar()
            deadlines.grant(db, course, user, "autocast", time.time() + 86400, "ill", user)
        _graded_pass(tool, learner, 1.0)
        queue.run_pending()
        assert lms.scores[-1]["userId"] == "student-7" and lms.scores[-1]["scoreGiven"] == 1.0
    finally:
        with connect(tool.config["DATABASE"]) as db:
            db.execute(
                "UPDATE course_lessons SET deadline = ? WHERE course_id = ? AND lesson = 'autocast'", (old, course)
            )
            deadlines.set_policy(db, course, LatePolicy())


def _exam_window(teacher, course_id: int, start: float, end: float) -> None:
    """The instructor's exam page: a window over autocast that holds its results back until it closes."""

    def field(ts):
        return time.strftime("%Y-%m-%dT%H:%M", time.gmtime(ts))

    data = {"starts_at": field(start), "ends_at": field(end), "exam-autocast": "on", "hold_results": "on"}
    assert form(teacher, f"/teach/courses/{course_id}/exam", data).status_code == 303


def test_scores_an_exam_held_back_reach_the_platform_when_it_closes_or_the_instructor_ends_it(tool, lms):
    """No "send all grades again" needed: the window's close (a task at that time) and an instructor's clearing
    send what the hold kept back, once each."""
    teacher = tool.test_client()
    launch(teacher, lms, "teacher-1", "instructor", lesson="autocast")
    learner = tool.test_client()
    launch(learner, lms, "student-8", "learner", lesson="autocast")
    queue, course = tool.extensions["amp_dojo_lti_queue"], _course_id(tool)

    def sent():
        return [s["scoreGiven"] for s in lms.scores if s["userId"] == "student-8"]

    now = time.time()
    _exam_window(teacher, course, now - 3600, now + 3600)
    _graded_pass(tool, learner, 0.5)
    queue.run_pending()
    assert sent() == []  # held: the LMS must not show what the learner may not see yet
    with connect(tool.config["DATABASE"]) as db:  # an hour later: the window has closed
        closes = db.execute("SELECT ends_at FROM course_exams WHERE course_id = ?", (course,)).scalar()
        db.execute("UPDATE course_exams SET ends_at = ? WHERE course_id = ?", (now - 1, course))
    queue.run_pending(now=closes + 1)
    assert sent() == [0.5]

    _exam_window(teacher, course, now - 3600, now + 3600)  # a second exam, ended early by clearing it
    _graded_pass(tool, learner, 1.0)
    queue.run_pending()
    assert sent() == [0.5]
    assert form(teacher, f"/teach/courses/{course}/exam", {"clear": "1"}).status_code == 303
    queue.run_pending()
    assert sent() == [0.5, 1.0]
    queue.run_pending(now=closes + 7200)  # the second window's own release at its close comes too: nothing new
    assert sent() == [0.5, 1.0]
    with connect(tool.config["DATABASE"]) as db:
        assert db.execute("SELECT score, state FROM lti_scores").rows() == [(1.0, "sent")]


def _course_id(app) -> int:
    with connect(app.config["DATABASE"]) as db:
        return db.execute("SELECT course_id FROM lti_contexts").scalar()


def test_a_deep_linked_lesson_returns_to_the_platform_and_its_launch_opens_that_lesson_with_its_deadline(tool, lms):
    teacher = tool.test_client()
    opened = launch(teacher, lms, "teacher-1", "instructor", deep_link=True)
    assert opened.status_code == 303 and opened.headers["Location"] == "/lti/deep-link"
    assert 'value="grad_scaler"' in teacher.get("/lti/deep-link").get_data(as_text=True)
    answer = form(teacher, "/lti/deep-link", {"lesson": "grad_scaler", "deadline": "2030-01-31"})
    fields = form_fields(answer.get_data(as_text=True))
    policy = answer.headers["Content-Security-Policy"]
    assert f"form-action 'self' {lms.url};" in policy and f"frame-ancestors {lms.url}" in policy  # in the LMS's frame
    before = len(lms.deep_links)
    assert requests.post(lms.url + "/deep_link_return", data={"JWT": fields["JWT"]}, timeout=10).ok
    item = lms.deep_links[before]
    assert item["type"] == "ltiResourceLink" and item["custom"]["lesson"] == "grad_scaler"
    with connect(tool.config["DATABASE"]) as db:
        deadline = db.execute("SELECT deadline FROM course_lessons WHERE lesson = 'grad_scaler'").scalar()
    assert time.strftime("%Y-%m-%d", time.gmtime(deadline)) == "2030-01-31"
    learner = launch(tool.test_client(), lms, "student-5", "learner", lesson=item["custom"]["lesson"])
    assert learner.headers["Location"] == "/lessons/grad_scaler"

    claim = "https://purl.imsglobal.org/spec/lti/claim/"
    copy = {claim + "custom": item["custom"], claim + "context": {"id": "course-101-copy", "title": "Copy"}}
    launch(tool.test_client(), lms, "teacher-1", "instructor", lesson="grad_scaler", **copy)  # the LMS copied it
    with connect(tool.config["DATABASE"]) as db:  # the instructor removes the original course's deadline here
        db.execute(
            "UPDATE course_lessons SET deadline = NULL WHERE course_id = "
            "(SELECT course_id FROM lti_contexts WHERE context_id = 'course-101')"
        )
    launch(
        tool.test_client(), lms, "teacher-1", "instructor", lesson="grad_scaler", **{claim + "custom": item["custom"]}
    )
    with connect(tool.config["DATABASE"]) as db:
        deadlines = db.execute(
            "SELECT x.context_id, cl.deadline FROM lti_contexts x JOIN course_lessons cl ON cl.course_id = x.course_id "
            "AND cl.lesson = 'grad_scaler' ORDER BY x.context_id"
        ).rows()
    assert deadlines == [("course-101", None), ("course-101-copy", deadline)]  # a removed deadline stays removed


def test_the_roster_is_imported_from_every_page_of_the_platform(tool, lms):
    teacher = tool.test_client()
    launch(teacher, lms, "teacher-1", "instructor", lesson="autocast")
    lms.members = [
        {
            "user_id": f"m{i}",
            "name": f"Member {i}",
            "email": f"m{i}@lms.example",
            "roles": ROLES["learner"],
            "status": "Active",
        }
        for i in range(3)
    ]
    lms.members.append({"user_id": "ta", "name": "Assistant", "roles": ROLES["instructor"], "status": "Active"})
    response = form(teacher, f"/teach/courses/{_course_id(tool)}/lti/roster", {})
    assert response.status_code == 303
    with connect(tool.config["DATABASE"]) as db:
        learners = db.execute(
            "SELECT a.sub FROM enrollments e JOIN lti_accounts a ON a.user_id = e.user_id ORDER BY a.sub"
        ).rows()
        teachers = db.execute(
            "SELECT a.sub FROM course_instructors c JOIN lti_accounts a ON a.user_id = c.user_id ORDER BY a.sub"
        ).rows()
    assert [r[0] for r in learners] == ["m0", "m1", "m2"]  # pages 1 and 2 (two members each)
    assert [r[0] for r in teachers] == ["ta", "teacher-1"]


def test_an_admin_registers_a_platform_from_the_command_line_and_instructors_see_the_urls(tmp_path, monkeypatch):
    from click.testing import CliRunner
    from webapp_testing import make_instructor, signin

    from webapp.cli import main

    config = base_config(tmp_path)
    for name in ("DATABASE", "QUEUE_URL", "SECRET_KEY"):
        monkeypatch.setenv(f"AMP_DOJO_{name}", config[name])
    runner = CliRunner()
    added = runner.invoke(
        main,
        [
            "lti",
            "add-platform",
            "--issuer",
            "https://canvas.example",
            "--client-id",
            "1000",
            "--login-url",
            "https://canvas.example/api/lti/authorize_redirect",
            "--token-url",
            "https://canvas.example/login/oauth2/token",
            "--jwks-url",
            "https://canvas.example/api/lti/security/jwks",
            "--deployment",
            "d1",
            "--deployment",
            "d2",
        ],
    )
    assert added.exit_code == 0, added.output
    listed = runner.invoke(main, ["lti", "list"]).output
    assert "https://canvas.example\t1000\td1,d2" in listed
    app = create_app(config)
    make_instructor(app, "teacher")
    client = app.test_client()
    assert client.get("/lti/setup").status_code in (302, 401)
    signin(client, "teacher")
    page = client.get("/lti/setup").get_data(as_text=True)
    for url in ("/lti/login", "/lti/launch", "/lti/jwks", "oidc_initiation_url", "https://canvas.example"):
        assert url in page
    assert client.get("/lti/jwks").get_json()["keys"][0]["alg"] == "RS256"
    assert "frame-ancestors 'none'" in client.get("/lti/setup").headers["Content-Security-Policy"]
    assert "frame-ancestors https://canvas.example" in client.get("/lti/login").headers["Content-Security-Policy"]
    assert runner.invoke(main, ["lti", "remove", listed.split("\t")[0]]).exit_code == 0
    assert runner.invoke(main, ["lti", "list"]).output == ""


def test_a_launch_whose_cookies_the_browser_blocked_offers_a_new_window(tool, lms):
    client = tool.test_client()
    launch(client, lms, "teacher-1", "instructor", lesson="autocast")
    data = lms.id_token(start(client, lms, "teacher-1", "instructor"))
    blocked = tool.test_client()  # the launch arrives without the cookies the login set (a third-party iframe)
    page = blocked.post("/lti/launch", data={"id_token": data["id_token"], "state": data["state"]})
    assert page.status_code == 200
    link = re.search(r'href="([^"]+)" target="_blank"', page.get_data(as_text=True)).group(1)
    again = blocked.get(_path(html.unescape(link)))  # the same login, now at the top level
    assert again.status_code == 302 and again.headers["Location"].startswith(lms.url + "/authorize?")


def test_a_lesson_opens_inside_the_platforms_iframe_in_chromium(tmp_path, lms):
    """Headless Chromium on a platform page whose iframe starts the login: the lesson page renders in the frame."""
    chromium = os.environ.get("AMP_DOJO_CHROMIUM", "/usr/bin/chromium")
    if not os.path.exists(chromium):
        if os.environ.get("AMP_DOJO_REQUIRE_BROWSER"):
            pytest.fail(f"AMP_DOJO_REQUIRE_BROWSER is set but there is no Chromium at {chromium}")
        pytest.skip(f"no Chromium at {chromium}")
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from webapp.lti import platforms

    app = create_app(base_config(tmp_path))
    app.extensions["amp_dojo_exercises"] = _lessons()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tool_url = f"http://127.0.0.1:{server.server_port}"
    try:
        with connect(app.config["DATABASE"]) as db:
            platforms.add(
                db, lms.url, CLIENT_ID, lms.url + "/authorize", lms.url + "/token", lms.url + "/jwks", [DEPLOYMENT]
            )
        lms.tool = {
            "login": tool_url + "/lti/login",
            "launch": tool_url + "/lti/launch",
            "jwks": requests.get(tool_url + "/lti/jwks", timeout=10).json(),
        }
        lms.deployment = DEPLOYMENT
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page()
                page.goto(f"{lms.url}/course?user=teacher-1&role=instructor&lesson=autocast")
                frame = page.frame_locator("#tool")
                frame.locator("body[data-page='lesson']").wait_for(timeout=30_000)
                assert "/lessons/autocast" in page.frames[1].url
            finally:
                browser.close()
    finally:
        server.shutdown()


def test_over_https_the_lti_sessions_cookies_may_be_read_inside_the_platforms_frame(tool, lms):
    client = tool.test_client()
    login = client.get(_path(lms.login_url("teacher-1", "instructor")), base_url="https://localhost")
    cookies = login.headers.getlist("Set-Cookie")
    assert {c.split("=")[0] for c in cookies} >= {"session"} and any(c.startswith("lti1p3-state-") for c in cookies)
    for cookie in cookies:
        assert "SameSite=None" in cookie and "Secure" in cookie and "Partitioned" in cookie, cookie
    plain = tool.test_client().get("/", base_url="https://localhost").headers.getlist("Set-Cookie")
    assert plain and all("SameSite=Lax" in c and "Partitioned" not in c for c in plain)  # elsewhere: as before


def test_an_lms_registers_the_tool_dynamically_with_the_admins_link_and_then_launches(tmp_path, lms):
    """LTI Dynamic Registration: the link `amp-dojo lti registration-url` makes is the admin's consent; a forged
    link, a configuration naming another issuer or a platform refusing the token registers nothing."""
    from lti_platform import REGISTRATION_TOKEN

    from webapp.lti import dynamic

    app = create_app(base_config(tmp_path))
    app.extensions["amp_dojo_exercises"] = _lessons()
    client, grant = app.test_client(), dynamic.grant(app.config["SECRET_KEY"])
    configuration = lms.url + "/.well-known/openid-configuration"

    def register(link: str, token: str = REGISTRATION_TOKEN):
        return client.get(
            f"/lti/register/{link}", query_string={"openid_configuration": configuration, "registration_token": token}
        )

    before = len(lms.registrations)
    assert register("forged." + grant[7:]).status_code == 403
    lms.issuer_claimed = "https://canvas.instructure.com"
    try:
        assert register(grant).status_code == 400  # its issuer is not the address its configuration came from
    finally:
        lms.issuer_claimed = None
    assert register(grant, token="stolen").status_code == 502  # the platform refused the registration
    assert len(lms.registrations) == before
    with connect(app.config["DATABASE"]) as db:
        assert db.execute("SELECT count(*) FROM lti_platforms").scalar() == 0

    done = register(grant)
    assert done.status_code == 200 and 'data-testid="lti-registered"' in done.get_data(as_text=True)
    assert f"frame-ancestors {lms.url}" in done.headers["Content-Security-Policy"]  # inside the LMS's frame
    sent = lms.registrations[-1]
    assert (
        sent["initiate_login_uri"] == "http://localhost/lti/login" and sent["jwks_uri"] == "http://localhost/lti/jwks"
    )
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in sent["scope"].split()
    lms.tool = {
        "login": sent["initiate_login_uri"],
        "launch": sent["redirect_uris"][0],
        "jwks": client.get("/lti/jwks").get_json(),
    }
    lms.deployment = DEPLOYMENT
    opened = launch(client, lms, "teacher-9", "instructor", lesson="autocast")  # a real launch, as registered
    assert opened.status_code == 303 and opened.headers["Location"] == "/lessons/autocast"

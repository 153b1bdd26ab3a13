"""Personal access tokens (webapp/tokens.py): made on the account page and shown once, stored as a sha256 only,
listed with their last use, revocable, expiring; `Authorization: Bearer` submits and reads the account's own
submissions through the same code path as the web form (its limits included), and nothing else."""

import hashlib
import re
import time

from webapp_testing import csrf_headers, form, grade_as, make_instructor, signin, signup

from webapp.db import connect

CODE = "def train_step(*args):\n    return 0.0\n"


def make_token(client, name="laptop", days="") -> str:
    response = form(client, "/account/tokens", {"name": name, "days": days})
    assert response.status_code == 201, response.get_data(as_text=True)[:500]
    return re.search(r'data-testid="token-secret">(ampd_[\w-]+)<', response.get_data(as_text=True)).group(1)


def bearer(token: str, **headers) -> dict:
    return {"Authorization": f"Bearer {token}", **headers}


def rows(app, sql, params=()):
    db = connect(app.config["DATABASE"])
    try:
        return [dict(r) for r in db.execute(sql, params).fetchall()]
    finally:
        db.close()


def test_a_token_is_shown_once_and_only_its_sha256_is_stored(app):
    ada = app.test_client()
    signup(ada, "ada")
    token = make_token(ada)
    assert token.startswith("ampd_") and len(token) >= 45
    stored = rows(app, "SELECT * FROM access_tokens")
    assert len(stored) == 1 and stored[0]["token_hash"] == hashlib.sha256(token.encode()).hexdigest()
    assert all(token not in str(value) for value in stored[0].values())
    page = ada.get("/account/tokens").get_data(as_text=True)
    assert token not in page and "laptop" in page and token[-4:] in page
    assert 'data-state="active"' in page


def test_a_bearer_submission_is_the_accounts_and_shows_on_its_pages_and_the_dashboard(app):
    make_instructor(app, "teacher")
    teacher = app.test_client()
    signin(teacher, "teacher")
    made = form(teacher, "/teach/courses/new", {"name": "AMP", "lesson-grad_scaler": "on", "position-grad_scaler": "1"})
    course = made.headers["Location"]
    code = re.search(r'data-testid="join-code-value">(\w+)<', teacher.get(course).get_data(as_text=True)).group(1)
    ada = app.test_client()
    signup(ada, "ada")
    form(ada, "/courses/join", {"code": code})
    token = make_token(ada)
    terminal = app.test_client()  # no cookie, no CSRF token: only the bearer header
    response = terminal.post("/api/lessons/grad_scaler/submissions", json={"code": CODE}, headers=bearer(token))
    assert response.status_code == 202, response.get_json()
    assert "Set-Cookie" not in response.headers
    sid = response.get_json()["id"]
    grade_as(app, sid, "pass")
    result = terminal.get(f"/api/submissions/{sid}", headers=bearer(token)).get_json()
    assert result["status"] == "done" and result["result"]["status"] == "pass"
    assert ada.get(f"/api/submissions/{sid}").status_code == 200  # the account's browser session reads it
    assert [s["id"] for s in ada.get("/api/lessons/grad_scaler/submissions").get_json()["submissions"]] == [sid]
    dashboard = teacher.get(course).get_data(as_text=True)
    assert 'data-testid="passed">1<' in dashboard  # the instructor's dashboard counts the pass
    learner_page = re.search(r'href="(/teach/courses/\d+/learners/\d+)"', dashboard).group(1)
    assert f"/submissions/{sid}" in teacher.get(learner_page).get_data(as_text=True)
    assert teacher.get(f"/api/submissions/{sid}").status_code == 200  # the instructor's session reads it
    teachers_token = make_token(teacher)
    assert (
        terminal.get(f"/api/submissions/{sid}", headers=bearer(teachers_token)).status_code == 404
    )  # a token: own only
    assert "1 of 1 lessons passed" in ada.get("/courses").get_data(as_text=True)  # it counts for the course
    assert rows(app, "SELECT last_used_at FROM access_tokens")[0]["last_used_at"] is not None


def test_a_token_reads_only_its_own_accounts_submissions_and_nothing_else(app):
    ada, bob = app.test_client(), app.test_client()
    signup(ada, "ada")
    signup(bob, "bob")
    bobs = bob.post("/api/lessons/autocast/submissions", json={"code": CODE}, headers=csrf_headers(bob))
    token = make_token(ada)
    terminal = app.test_client()
    assert terminal.get(f"/api/submissions/{bobs.get_json()['id']}", headers=bearer(token)).status_code == 404
    assert terminal.get("/api/me", headers=bearer(token)).get_json() == {
        "username": "ada",
        "role": "learner",
        "token": True,
    }
    assert terminal.get("/account/tokens", headers=bearer(token)).status_code == 403
    assert terminal.post("/account/tokens", data={"name": "more"}, headers=bearer(token)).status_code == 403
    assert terminal.get("/api/lessons", headers=bearer(token)).status_code == 403


def test_a_bearer_header_wins_over_the_session_cookie(app):
    ada, bob = app.test_client(), app.test_client()
    signup(ada, "ada")
    signup(bob, "bob")
    token = make_token(ada)
    assert bob.get("/api/me", headers=bearer(token)).get_json()["username"] == "ada"
    bad = bob.get("/api/me", headers=bearer("ampd_nope"))
    assert bad.status_code == 401  # bob's cookie does not stand in for a wrong token


def test_a_revoked_an_expired_and_an_unknown_token_are_a_401_in_the_learners_language(app, monkeypatch):
    ada = app.test_client()
    signup(ada, "ada")
    revoked, expiring = make_token(ada, "old"), make_token(ada, "short", days="1")
    token_id = rows(app, "SELECT id FROM access_tokens WHERE name = 'old'")[0]["id"]
    assert form(ada, f"/account/tokens/{token_id}/revoke", {}).status_code == 303
    assert 'data-state="revoked"' in ada.get("/account/tokens").get_data(as_text=True)
    terminal = app.test_client()
    url = "/api/lessons/autocast/submissions"
    gone = terminal.post(url, json={"code": CODE}, headers=bearer(revoked))
    assert gone.status_code == 401 and "revoked" in gone.get_json()["error"]
    unknown = terminal.post(url, json={"code": CODE}, headers=bearer("ampd_" + "x" * 43, **{"Accept-Language": "it"}))
    assert unknown.status_code == 401 and "sconosciuto o revocato" in unknown.get_json()["error"]
    assert terminal.get("/api/me", headers=bearer(expiring)).status_code == 200
    later = time.time() + 2 * 86400
    monkeypatch.setattr(time, "time", lambda: later)
    expired = terminal.get("/api/me", headers=bearer(expiring, **{"Accept-Language": "id"}))
    assert expired.status_code == 401 and "kedaluwarsa" in expired.get_json()["error"]


def test_a_bearer_submission_meets_the_web_forms_bounds_and_rate_limits(make_app):
    app = make_app(RATE_LIMIT=1, RATE_BURST=1, MAX_CODE_BYTES=1000)
    ada = app.test_client()
    signup(ada, "ada")
    token = make_token(ada)
    terminal = app.test_client()
    url = "/api/lessons/autocast/submissions"
    assert terminal.post(url, json={"code": "x" * 1001}, headers=bearer(token)).status_code == 413
    assert terminal.post(url, json={"code": CODE}, headers=bearer(token)).status_code == 202
    limited = terminal.post(url, json={"code": CODE}, headers=bearer(token))
    assert limited.status_code == 429 and limited.headers.get("Retry-After")
    assert ada.post(url, json={"code": CODE}, headers=csrf_headers(ada)).status_code == 429  # one learner, one limit


def test_another_account_cannot_revoke_a_token_and_names_are_bounded(app):
    ada, bob = app.test_client(), app.test_client()
    signup(ada, "ada")
    signup(bob, "bob")
    make_token(ada)
    token_id = rows(app, "SELECT id FROM access_tokens")[0]["id"]
    assert form(bob, f"/account/tokens/{token_id}/revoke", {}).status_code == 404
    assert rows(app, "SELECT revoked_at FROM access_tokens")[0]["revoked_at"] is None
    assert form(ada, "/account/tokens", {"name": ""}).status_code == 400
    assert form(ada, "/account/tokens", {"name": "x", "days": "-3"}).status_code == 400
    assert app.test_client().get("/account/tokens").status_code == 302  # signed out: sign in first

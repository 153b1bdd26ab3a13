"""The JSON API without grading: lessons, limits, CSRF, privacy."""

import json
import time

import pytest
from click.testing import CliRunner

from grader.lesson.loader import load_all
from webapp import cli
from webapp.collector import collect
from webapp.db import connect

REFERENCES = {ex.id: ex.reference for ex in load_all().values()}
STARTER = load_all()["autocast"].starter


def test_lesson_list_reports_progress_per_learner(app, client):
    lessons = client.get("/api/lessons").get_json()["lessons"]
    assert [item["id"] for item in lessons][:2] == ["autocast", "grad_scaler"]
    assert {item["progress"] for item in lessons} == {"not_started"}
    with app.app_context():
        from webapp.db import get_db

        client.get("/")  # creates the session
        learner = _learner(client)
        db = get_db()
        for lesson, status in (("autocast", "pass"), ("grad_scaler", "fail")):
            db.execute(
                "INSERT INTO submissions (id, learner, lesson, code, status, created_at, queued_at, "
                "result_status) VALUES (?, ?, ?, '', 'done', 0, 0, ?)",
                (lesson, learner, lesson, status),
            )
    progress = {item["id"]: item["progress"] for item in client.get("/api/lessons").get_json()["lessons"]}
    assert progress == {
        **{item["id"]: "not_started" for item in lessons},
        "autocast": "passed",
        "grad_scaler": "attempted",
    }
    other = app.test_client()
    assert {item["progress"] for item in other.get("/api/lessons").get_json()["lessons"]} == {"not_started"}


def _learner(client) -> str:
    with client.session_transaction() as session:
        return session["learner"]


@pytest.mark.parametrize("lesson_id", sorted(REFERENCES))
def test_lesson_api_never_sends_the_reference_or_quiz_answers(client, lesson_id):
    for lang in ("en", "it", "id"):
        response = client.get(f"/api/lessons/{lesson_id}?lang={lang}")
        assert response.status_code == 200
        body = response.get_data(as_text=True)
        assert REFERENCES[lesson_id].strip() not in json.loads(body)["starter"]
        assert "reference" not in json.loads(body)
        assert json.dumps(REFERENCES[lesson_id])[1:-1] not in body
        assert all(set(q) == {"question", "choices"} for q in json.loads(body)["quiz"])


def test_lesson_api_is_localised(client):
    assert client.get("/api/lessons/autocast?lang=it").get_json()["title"] == "Precisione mista con torch.autocast"
    assert client.get("/api/lessons/autocast?lang=xx").get_json()["title"] == "Mixed precision with torch.autocast"


def test_unknown_lesson_is_404_json(client, csrf):
    assert client.get("/api/lessons/nope").status_code == 404
    response = client.post("/api/lessons/nope/submissions", json={"code": "x"}, headers=csrf(client))
    assert response.status_code == 404 and "error" in response.get_json()


def _count(app, table="submissions") -> int:
    with app.app_context():
        from webapp.db import get_db

        return get_db().execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_post_without_csrf_token_is_rejected_and_stores_nothing(app, client, csrf):
    client.get("/")
    assert client.post("/api/lessons/autocast/submissions", json={"code": STARTER}).status_code == 403
    wrong = client.post("/api/lessons/autocast/submissions", json={"code": STARTER}, headers={"X-CSRF-Token": "forged"})
    assert wrong.status_code == 403
    other_session_token = csrf(app.test_client())
    assert client.post("/api/quiz/autocast/0", json={"choice": 2}, headers=other_session_token).status_code == 403
    assert _count(app) == 0
    assert app.extensions["amp_dojo_queue"].pending_count() == 0


def test_accepted_submission_is_stored_then_enqueued(app, client, submit):
    response = submit(client, STARTER)
    assert response.status_code == 202
    body = response.get_json()
    assert body["status"] == "queued" and body["position"] == 1
    assert body["urls"]["stream"] == f"/api/submissions/{body['id']}/stream"
    assert app.extensions["amp_dojo_queue"].pending_count() == 1
    detail = client.get(body["urls"]["self"]).get_json()
    assert detail["status"] == "queued" and detail["code"] == STARTER and detail["result"] is None


def test_oversized_code_is_413(make_app, submit):
    app = make_app(MAX_CODE_BYTES=1000)
    client = app.test_client()
    assert submit(client, "x" * 1001).status_code == 413
    assert submit(client, "é" * 501).status_code == 413  # bytes, not characters
    assert submit(client, "x" * 1000).status_code == 202


def test_body_far_over_the_limit_is_413_before_parsing(make_app, csrf):
    app = make_app(MAX_CODE_BYTES=1000)
    client = app.test_client()
    response = client.post(
        "/api/lessons/autocast/submissions",
        data=b"{" + b" " * 200_000 + b"}",
        content_type="application/json",
        headers=csrf(client),
    )
    assert response.status_code == 413


def test_malformed_body_is_400(client, csrf):
    response = client.post("/api/lessons/autocast/submissions", json={"source": "x"}, headers=csrf(client))
    assert response.status_code == 400


def test_rate_limit_is_a_burst_then_a_rate_with_retry_after(make_app, submit):
    app = make_app(RATE_BURST=3, RATE_LIMIT=6)  # a token every 10 s after a burst of 3
    client = app.test_client()
    assert [submit(client, STARTER).status_code for _ in range(3)] == [202, 202, 202]
    refused = submit(client, STARTER)
    assert refused.status_code == 429
    assert 9 <= int(refused.headers["Retry-After"]) <= 10
    assert "burst of 3" in refused.get_json()["error"]
    assert submit(app.test_client(), STARTER).status_code == 202  # another learner is not limited
    age_submissions(app, 10.5)  # one token has come back, not two
    assert [submit(client, STARTER).status_code for _ in range(2)] == [202, 429]


def age_submissions(app, seconds: float):
    db = connect(app.config["DATABASE"])
    db.execute("UPDATE submissions SET created_at = created_at - ?", (seconds,))
    db.close()


def test_a_cancelled_run_gives_its_token_back(make_app, submit, csrf):
    app = make_app(RATE_BURST=2, RATE_LIMIT=1)
    client = app.test_client()
    for _ in range(4):
        body = submit(client, STARTER).get_json()
        assert client.post(body["urls"]["cancel"], headers=csrf(client)).status_code == 200
    assert [submit(client, STARTER).status_code for _ in range(3)] == [202, 202, 429]


def test_a_refusal_is_worded_in_the_learners_language(make_app, submit):
    app = make_app(RATE_BURST=1, RATE_LIMIT=1)
    client = app.test_client()
    client.set_cookie("lang", "it")
    assert submit(client, STARTER).status_code == 202
    refused = submit(client, STARTER)
    assert refused.status_code == 429 and "Troppe esecuzioni in poco tempo" in refused.get_json()["error"]


def test_the_queue_holds_one_submission_per_learner_and_serves_them_round_robin(make_app, submit):
    """A learner's second submission joins the queue only once their first has a verdict, behind the other
    learners' that came meanwhile: one learner never keeps another waiting behind more than one of theirs."""
    app = make_app()
    queue = app.extensions["amp_dojo_queue"]
    hostile, other = app.test_client(), app.test_client()
    mine = [submit(hostile, STARTER).get_json() for _ in range(3)]
    theirs = submit(other, STARTER).get_json()
    assert queue.pending_count() == 2
    assert [t.args[0]["submission_id"] for t in queue.huey.pending()] == [mine[0]["id"], theirs["id"]]
    assert [hostile.get(m["urls"]["self"]).get_json()["position"] for m in mine] == [1, 3, 4]
    assert other.get(theirs["urls"]["self"]).get_json()["position"] == 2
    queue.run_pending(limit=1)  # the first one's verdict arrives
    collect(connect(app.config["DATABASE"]), queue, app.config)
    assert [t.args[0]["submission_id"] for t in queue.huey.pending()] == [theirs["id"], mine[1]["id"]]


def test_per_address_limit_catches_a_client_that_drops_its_cookie(make_app, submit):
    app = make_app(RATE_LIMIT=100, IP_RATE_LIMIT=2)
    assert [submit(app.test_client(), STARTER).status_code for _ in range(3)] == [202, 202, 429]


def test_full_queue_is_429_with_retry_after(make_app, submit):
    app = make_app(QUEUE_MAX=2)
    assert submit(app.test_client(), STARTER).status_code == 202
    assert submit(app.test_client(), STARTER).status_code == 202
    refused = submit(app.test_client(), STARTER)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert app.extensions["amp_dojo_queue"].pending_count() == 2


def test_other_learner_gets_404_for_a_submission(app, client, submit):
    sid = submit(client, STARTER).get_json()["id"]
    stranger = app.test_client()
    assert stranger.get(f"/api/submissions/{sid}").status_code == 404
    assert stranger.get(f"/api/submissions/{sid}/stream").status_code == 404
    assert stranger.get(f"/submissions/{sid}").status_code == 404
    assert client.get(f"/api/submissions/{sid}").status_code == 200
    assert stranger.get("/api/lessons/autocast/submissions").get_json()["submissions"] == []
    assert [s["id"] for s in client.get("/api/lessons/autocast/submissions").get_json()["submissions"]] == [sid]


def test_quiz_answers_one_question_at_a_time(client, csrf):
    right = client.post("/api/quiz/autocast/0", json={"choice": 2}, headers=csrf(client)).get_json()
    first = client.post("/api/quiz/autocast/0", json={"choice": 0}, headers=csrf(client)).get_json()
    wrong = client.post("/api/quiz/autocast/0", json={"choice": 1, "attempt": 2}, headers=csrf(client)).get_json()
    assert right["correct"] is True and "Softmax" in right["explanation"]
    assert first == {"correct": False, "retry": True}  # a first wrong answer does not give the answer away
    assert wrong["correct"] is False and "Softmax" in wrong["explanation"] and wrong["answer"] == 2
    assert (
        client.post("/api/quiz/autocast/0", json={"choice": 0, "attempt": 0}, headers=csrf(client)).status_code == 400
    )
    assert client.post("/api/quiz/autocast/9", json={"choice": 0}, headers=csrf(client)).status_code == 400
    assert client.post("/api/quiz/autocast/0", json={"choice": 7}, headers=csrf(client)).status_code == 400


def test_app_refuses_to_grade_with_local_sandbox_unless_allowed(make_app, submit):
    app = make_app(SANDBOX="local", ALLOW_LOCAL_SANDBOX=False)
    response = submit(app.test_client(), STARTER)
    assert response.status_code == 503
    assert "ALLOW_LOCAL_SANDBOX" in response.get_json()["error"]
    assert _count(app) == 0 and app.extensions["amp_dojo_queue"].pending_count() == 0


def test_worker_refuses_to_start_with_local_sandbox_unless_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv("AMP_DOJO_QUEUE_URL", f"sqlite:///{tmp_path / 'q.sqlite3'}")
    monkeypatch.setenv("AMP_DOJO_SANDBOX", "local")
    monkeypatch.setenv("AMP_DOJO_ALLOW_LOCAL_SANDBOX", "false")
    result = CliRunner().invoke(cli.main, ["worker"])
    assert result.exit_code != 0
    assert "cannot grade" in result.output and "ALLOW_LOCAL_SANDBOX" in result.output


def test_grading_task_refuses_local_sandbox_when_the_worker_does_not_allow_it(make_app, submit):
    """The payload cannot talk a worker into running unisolated code."""
    app = make_app()
    from webapp.queue import GradingQueue, WorkerSettings

    sid = submit(app.test_client(), STARTER).get_json()["id"]
    strict = GradingQueue(app.config["QUEUE_URL"], WorkerSettings(allow_local=False))
    assert strict.run_pending() == 1
    outcome = strict.peek("result", sid, 1)
    assert outcome["status"] == "error" and "local" in outcome["reason"] and "not allowed" in outcome["reason"]


def test_responses_carry_a_strict_content_security_policy(client):
    for url in ("/", "/lessons/autocast", "/api/lessons"):
        headers = client.get(url).headers
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp
        assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_live_streams_are_capped_per_learner_and_a_closed_one_frees_its_slot(make_app, submit):
    app = make_app(MAX_STREAMS=3, MAX_STREAMS_PER_LEARNER=2, STREAM_SECONDS=5)
    client = app.test_client()
    sid = submit(client, STARTER).get_json()["id"]
    url = f"/api/submissions/{sid}/stream"
    first, second = client.get(url, buffered=False), client.get(url, buffered=False)
    assert (first.status_code, second.status_code) == (200, 200)
    third = client.get(url, buffered=False)
    assert third.status_code == 429 and third.headers["Retry-After"] == "5"
    first.close()  # the tab went away before reading anything
    again = client.get(url, buffered=False)
    assert again.status_code == 200
    other = app.test_client()  # the process-wide cap holds across learners
    other_sid = submit(other, STARTER).get_json()["id"]
    assert other.get(f"/api/submissions/{other_sid}/stream", buffered=False).status_code == 200
    assert other.get(f"/api/submissions/{other_sid}/stream", buffered=False).status_code == 429
    for response in (second, again):
        response.close()


def test_one_learner_or_address_cannot_fill_the_queue(make_app, submit):
    app = make_app(MAX_WAITING_PER_LEARNER=2, MAX_WAITING_PER_IP=3, QUEUE_MAX=50)
    learner = app.test_client()
    assert [submit(learner, STARTER).status_code for _ in range(2)] == [202, 202]
    third = submit(learner, STARTER)
    assert third.status_code == 429 and "still waiting" in third.get_json()["error"] and third.headers["Retry-After"]
    assert submit(app.test_client(), STARTER).status_code == 202  # another learner: the address has room for one
    assert submit(app.test_client(), STARTER).status_code == 429  # a cookie-less client is held by its address


def test_absurd_event_ids_from_the_client_are_harmless(client, submit):
    sid = submit(client, STARTER).get_json()["id"]
    huge = "9" * 40
    assert client.get(f"/api/submissions/{sid}?after={huge}").status_code == 200
    response = client.get(f"/api/submissions/{sid}/stream", headers={"Last-Event-ID": huge}, buffered=False)
    assert response.status_code == 200
    response.close()


MALFORMED = [
    ("post", "/api/quiz/autocast/0", b"[1]"),
    ("post", "/api/quiz/autocast/0", b'"x"'),
    ("post", "/api/quiz/autocast/0", b"[" * 1100 + b"]" * 1100),
    ("post", "/api/lessons/autocast/submissions", b"[" * 1100 + b"]" * 1100),
    ("post", "/api/lessons/autocast/submissions", b'{"code": "\\ud800 print(1)"}'),
    ("post", "/api/lessons/autocast/submissions", b'{"code": 1}'),
]


@pytest.mark.parametrize("method,url,body", MALFORMED, ids=lambda v: repr(v)[:40])
def test_malformed_body_is_a_json_400_never_a_500(client, csrf, method, url, body):
    response = getattr(client, method)(url, data=body, headers={**csrf(client), "Content-Type": "application/json"})
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert "error" in response.get_json()


@pytest.mark.parametrize("value", ["%C2%B2", "-1", "1e3"])
def test_malformed_event_ids_are_a_json_400(client, csrf, submit, value):
    sid = submit(client, STARTER).get_json()["id"]
    for response in (
        client.get(f"/api/submissions/{sid}?after={value}"),
        client.get(f"/api/submissions/{sid}/stream?last_event_id={value}"),
    ):
        assert response.status_code == 400 and "error" in response.get_json()


def test_an_event_id_of_5000_digits_is_clamped_not_a_500(client, submit):
    sid = submit(client, STARTER).get_json()["id"]
    assert client.get(f"/api/submissions/{sid}?after={'9' * 5000}").status_code == 200


def test_wrong_method_under_api_is_json_with_allow(client):
    response = client.get("/api/quiz/autocast/0")
    assert response.status_code == 405 and "error" in response.get_json()
    assert "POST" in response.headers["Allow"]
    assert client.get("/api/nothing-here").get_json()["error"]


def test_api_answers_and_pages_are_never_cached(client):
    assert client.get("/api/session").headers["Cache-Control"] == "no-store"
    assert client.get("/lessons/autocast").headers["Cache-Control"] == "no-store"


def test_language_switch_never_puts_a_newline_in_a_header(client, csrf):
    response = client.post(
        "/lang", data={"lang": "en", "next": "/\r\nX-Injected: 1", "csrf_token": csrf(client)["X-CSRF-Token"]}
    )
    assert response.status_code == 303 and response.headers["Location"].endswith("/")
    assert "X-Injected" not in response.headers


def test_fresh_cookies_from_one_address_cannot_hold_every_stream(make_app, submit):
    app = make_app(MAX_STREAMS=8, MAX_STREAMS_PER_LEARNER=2, MAX_STREAMS_PER_IP=2)
    opened, codes = [], []
    for _ in range(4):  # four anonymous learners, one address: a client that sheds its cookie
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = "10.0.0.1"
        sid = submit(client, STARTER).get_json()["id"]
        response = client.get(f"/api/submissions/{sid}/stream", buffered=False)
        codes.append(response.status_code)
        opened.append(response)
    other = app.test_client()
    other.environ_base["REMOTE_ADDR"] = "10.0.0.2"
    sid = submit(other, STARTER).get_json()["id"]
    elsewhere = other.get(f"/api/submissions/{sid}/stream", buffered=False)
    assert codes == [200, 200, 429, 429] and elsewhere.status_code == 200
    opened[0].close()  # a closed stream frees its address's slot
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = "10.0.0.1"
    sid = submit(client, STARTER).get_json()["id"]
    again = client.get(f"/api/submissions/{sid}/stream", buffered=False)
    assert again.status_code == 200
    for response in opened + [elsewhere, again]:
        response.close()


def test_a_stream_of_a_submission_that_makes_no_progress_ends_so_the_page_polls(make_app, submit):
    app = make_app(STREAM_SECONDS=20, STREAM_IDLE_SECONDS=1, COLLECT_INTERVAL=0)
    client = app.test_client()
    sid = submit(client, STARTER).get_json()["id"]  # queued, and no worker ever takes it
    started = time.monotonic()
    response = client.get(f"/api/submissions/{sid}/stream", buffered=False)
    body = b"".join(response.response)  # ends by itself: the test would wait STREAM_SECONDS otherwise
    response.close()
    assert time.monotonic() - started < 5
    assert b"event: queued" in body and b"event: done" not in body


def test_many_learners_from_one_address_put_at_most_its_turns_ahead_of_a_learner_elsewhere(make_app):
    """Twelve learners (accounts are cheap) from one address: a learner elsewhere waits behind QUEUE_TURNS_PER_IP
    of theirs, not twelve; among themselves they take turns, the one served least recently first."""
    from webapp_testing import csrf_headers, grade_as

    app = make_app(QUEUE_TURNS_PER_IP=2)
    queue = app.extensions["amp_dojo_queue"]

    def submit_from(client, address: str) -> str:
        response = client.post(
            "/api/lessons/autocast/submissions",
            json={"code": STARTER},
            headers=csrf_headers(client),
            environ_base={"REMOTE_ADDR": address},
        )
        assert response.status_code == 202
        return response.get_json()["id"]

    puppets = [app.test_client() for _ in range(12)]
    first, second = submit_from(puppets[0], "10.0.0.9"), submit_from(puppets[0], "10.0.0.9")
    others = [submit_from(p, "10.0.0.9") for p in puppets[1:]]
    honest = app.test_client()
    mine = submit_from(honest, "10.0.0.1")
    assert [t.args[0]["submission_id"] for t in queue.huey.pending()] == [first, others[0], mine]
    assert honest.get(f"/api/submissions/{mine}").get_json()["position"] == 3
    grade_as(app, first, "fail")  # a turn of the address's is free: the learner not served yet goes before
    pending = [t.args[0]["submission_id"] for t in queue.huey.pending()]  # (first's task stays: it was scripted)
    assert pending == [first, others[0], mine, others[1]] and second not in pending

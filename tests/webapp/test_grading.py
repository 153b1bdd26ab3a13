"""Real gradings of the autocast lesson, run in this process from the queue
(as a worker would), then read through the API, the SSE stream and the pages."""

import json
import re

import pytest
from webapp_testing import base_config, csrf_headers

from grader.lesson.loader import load_exercise
from webapp import create_app

AUTOCAST = load_exercise("autocast")
PRINTS_SCRIPT = AUTOCAST.reference.replace(
    "    return loss", "    print(\"<script>alert('out')</script><img src=x onerror=alert(1)>\")\n    return loss"
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One app, one learner, three graded submissions: reference, starter, and one printing HTML."""
    app = create_app(base_config(tmp_path_factory.mktemp("graded")))
    client = app.test_client()
    ids = {}
    for name, code in (("reference", AUTOCAST.reference), ("starter", AUTOCAST.starter), ("prints", PRINTS_SCRIPT)):
        response = client.post("/api/lessons/autocast/submissions", json={"code": code}, headers=csrf_headers(client))
        assert response.status_code == 202
        ids[name] = response.get_json()["id"]
    queue, graded_now = app.extensions["amp_dojo_queue"], 0
    for _ in range(3):  # the queue holds one of a learner's submissions at a time (webapp/dispatch.py)
        graded_now += queue.run_pending()
        client.get(f"/api/submissions/{ids['reference']}")  # collects the verdict: the next one is handed over
        for sid in ids.values():
            client.get(f"/api/submissions/{sid}")
    assert graded_now == 3
    return app, client, ids


def detail(client, sid):
    response = client.get(f"/api/submissions/{sid}")
    assert response.status_code == 200
    return response.get_json()


def test_reference_passes_and_the_lesson_shows_passed(graded):
    app, client, ids = graded
    d = detail(client, ids["reference"])
    assert d["status"] == "done" and d["attempt"] == 1
    assert d["result"]["status"] == "pass" and d["score"] == 1.0
    assert d["result"]["plots"]["loss"]["baseline"]
    progress = {c["id"]: c["progress"] for c in client.get("/api/lessons").get_json()["lessons"]}
    assert progress["autocast"] == "passed"
    html = client.get("/").get_data(as_text=True)
    assert 'data-lesson-id="autocast" data-progress="passed"' in html


def test_starter_fails_with_the_mistake_named_and_its_line(graded):
    _app, client, ids = graded
    result = detail(client, ids["starter"])["result"]
    assert result["status"] == "fail"
    call_order = next(c for c in result["checks"] if c["id"] == "call_order")
    assert call_order["status"] == "fail"
    finding = next(f for f in call_order["findings"] if f["id"] == "no_autocast")
    assert finding["fix"]


def test_each_submission_is_accepted_once_with_one_done_event(graded):
    app, client, ids = graded
    for sid in ids.values():
        events = detail(client, sid)["events"]
        assert [e["type"] for e in events].count("done") == 1 and events[-1]["type"] == "done"
        assert [e["data"].get("stage") for e in events].count("started") == 1
        assert [e["id"] for e in events] == sorted(e["id"] for e in events)


def parse_sse(text: str) -> list[dict]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append(
                {
                    "id": int(fields["id"]) if "id" in fields else None,
                    "event": fields["event"],
                    "data": json.loads(fields["data"]),
                }
            )
    return events


def test_stream_sends_the_events_of_a_graded_submission_then_ends(graded):
    _app, client, ids = graded
    response = client.get(f"/api/submissions/{ids['reference']}/stream", buffered=True)  # closed, as a server would
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    events = parse_sse(response.get_data(as_text=True))
    kinds = [e["event"] for e in events]
    assert kinds[0] == "progress" and kinds[-1] == "done" and kinds.count("done") == 1
    stages = [e["data"]["stage"] for e in events if e["event"] == "progress"]
    assert stages[:3] == ["queued", "started", "static"] and "steps" in stages
    checks = {e["data"]["check"]: e["data"]["status"] for e in events if e["event"] == "check"}
    assert checks == {"call_order": "pass", "parity": "pass", "coverage": "pass", "speedup": "not_applicable"}
    assert events[-1]["data"]["result"]["status"] == "pass"


def test_stream_resumes_after_last_event_id(graded):
    _app, client, ids = graded
    url = f"/api/submissions/{ids['starter']}/stream"
    full = parse_sse(client.get(url, buffered=True).get_data(as_text=True))
    cut = full[3]["id"]
    resumed = parse_sse(client.get(url, headers={"Last-Event-ID": str(cut)}, buffered=True).get_data(as_text=True))
    assert [e["id"] for e in resumed] == [e["id"] for e in full if e["id"] > cut]


def test_polling_returns_only_events_after_the_given_id(graded):
    _app, client, ids = graded
    events = detail(client, ids["reference"])["events"]
    later = client.get(f"/api/submissions/{ids['reference']}?after={events[-2]['id']}").get_json()["events"]
    assert [e["type"] for e in later] == ["done"]


def test_printed_html_comes_back_as_text_never_as_markup(graded):
    _app, client, ids = graded
    result = detail(client, ids["prints"])["result"]
    assert "<script>alert('out')</script>" in result["output"]  # the API returns the text as it was
    html = client.get(f"/submissions/{ids['prints']}").get_data(as_text=True)
    assert "<script>alert" not in html and "<img src=x" not in html
    data = json.loads(re.search(r'id="page-data">(.*?)</script>', html, re.S).group(1))
    assert "<script>alert('out')</script>" in data["submission"]["result"]["output"]


def test_history_lists_the_learners_submissions_newest_first(graded):
    _app, client, ids = graded
    listed = [s["id"] for s in client.get("/api/lessons/autocast/submissions").get_json()["submissions"]]
    assert listed == [ids["prints"], ids["starter"], ids["reference"]]


def test_worker_applies_its_configured_sandbox_limits(make_app, submit, grade_queued):
    app = make_app(SANDBOX_LIMITS={"step_timeout_s": 2})
    client = app.test_client()
    hangs = (
        "def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):\n    while True:\n        pass\n"
    )
    sid = submit(client, hangs).get_json()["id"]
    assert grade_queued(app) == 1
    error = detail(client, sid)["result"]["error"]
    assert error["kind"] == "timeout" and "within 2 s" in error["message"] and error["line"] in (2, 3)


def test_a_yaml_only_lesson_with_setup_code_is_graded_by_the_web_app(
    make_app, submit, grade_queued, tmp_path, monkeypatch
):
    """Adding a lesson is adding a file: no Python of the platform changes."""
    from pathlib import Path

    folder = tmp_path / "more_lessons"
    folder.mkdir()
    text = (Path(__file__).resolve().parents[2] / "exercises" / "multiple_models.yaml").read_text()
    (folder / "two_nets.yaml").write_text(text.replace("id: multiple_models\n", "id: two_nets\n", 1))
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(folder))
    app = make_app()
    client = app.test_client()
    assert "two_nets" in [item["id"] for item in client.get("/api/lessons").get_json()["lessons"]]
    assert client.get("/lessons/two_nets").status_code == 200
    reference = load_exercise("multiple_models").reference
    response = submit(client, reference, lesson="two_nets")
    assert response.status_code == 202, response.get_json()
    assert grade_queued(app) == 1
    d = detail(client, response.get_json()["id"])
    assert d["result"]["status"] == "pass", d["result"]
    assert "model_b.0.weight" in d["result"]["checks"][1]["measured"]["update_rel_diff"]


def test_the_grader_speaks_the_learners_language(graded):
    """The same result in Italian: every message and fix from the catalog, the figures worded as rows; the
    finding ids (for tools) unchanged."""
    from grader.wording.catalog import render

    _app, client, ids = graded
    english = detail(client, ids["starter"])["result"]
    italian = client.get(f"/api/submissions/{ids['starter']}?lang=it").get_json()["result"]
    finding = next(f for c in italian["checks"] for f in c["findings"] if f["id"] == "no_autocast")
    assert finding["message"] == render("no_autocast", {}, "it") != render("no_autocast", {}, "en")
    assert finding["fix"] == render("no_autocast.fix", {}, "it")
    parity = next(c for c in italian["checks"] if c["id"] == "parity")
    assert parity["message"].startswith("coincide con la run FP32")
    assert parity["measured_words"][0][0] == "loss rispetto a FP32" and "al massimo" in parity["measured_words"][0][2]
    assert [c["id"] for c in italian["checks"]] == [c["id"] for c in english["checks"]]
    assert italian["lang"] == "it" and english["lang"] == "en"
    client.set_cookie("lang", "it")
    try:
        page = client.get(f"/submissions/{ids['starter']}").get_data(as_text=True)
    finally:
        client.delete_cookie("lang")
    data = json.loads(re.search(r'id="page-data">(.*?)</script>', page, re.S).group(1))
    shown = [f["message"] for c in data["submission"]["result"]["checks"] for f in c["findings"]]
    assert render("no_autocast", {}, "it") in shown

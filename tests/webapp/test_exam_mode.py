"""Exam mode (webapp/exams.py): a course's window over some of its lessons refuses submissions outside it with
the reason, in the learner's language; inside it hints and quiz explanations are off and the results may be
held back until it closes; every attempt is logged for the instructor. Verdicts are scripted: no grading."""

import re
from datetime import datetime, timezone

from test_regrade import enrolled_class
from webapp_testing import csrf_headers, form, grade_as

from grader.lesson.loader import load_exercise
from webapp import exams
from webapp.db import connect

HOUR = 3600.0


def set_window(teacher, course_id, start, end, lessons=("autocast",), hold=False):
    def field(ts):
        return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M")

    data = {"starts_at": field(start), "ends_at": field(end), **{f"exam-{lesson}": "on" for lesson in lessons}}
    if hold:
        data["hold_results"] = "on"
    assert form(teacher, f"/teach/courses/{course_id}/exam", data).status_code == 303


def post(client, lesson="autocast", lang="en"):
    return client.post(
        f"/api/lessons/{lesson}/submissions?lang={lang}", json={"code": "x = 1"}, headers=csrf_headers(client)
    )


def test_an_exam_window_refuses_outside_switches_help_off_inside_holds_results_and_logs_attempts(app):
    teacher, course_id, learners = enrolled_class(app, ("ada", "bob"), lesson="autocast")
    ada = learners["ada"]
    now = datetime.now(timezone.utc).timestamp()
    set_window(teacher, course_id, now + 2 * HOUR, now + 3 * HOUR)

    early = post(ada)
    assert early.status_code == 403 and "opens at" in early.get_json()["error"]
    italian = post(ada, lang="it").get_json()["error"]
    assert "si apre il" in italian and re.search(r" (gen|dic) \d{4}, ", italian)  # a date as Italian writes it
    assert "hint-button" in ada.get("/lessons/autocast").get_data(as_text=True)  # before the window: help is on

    set_window(teacher, course_id, now - HOUR, now + HOUR, hold=True)
    taken = post(ada)
    assert taken.status_code == 202
    sid = taken.get_json()["id"]
    page = ada.get("/lessons/autocast").get_data(as_text=True)
    assert 'data-testid="exam-notice"' in page and "hint-button" not in page
    assert ada.get("/api/lessons/autocast").get_json()["hints"] == []
    right = load_exercise("autocast").quiz[0].answer
    said = ada.post("/api/quiz/autocast/0", json={"choice": right}, headers=csrf_headers(ada)).get_json()
    assert said["correct"] is True and said["explanation"] == ""
    assert learners["bob"].get("/api/lessons/autocast").get_json()["hints"] == []  # everyone in the course
    db = connect(app.config["DATABASE"])
    assert (
        exams.exam_in_force(db, db.execute("SELECT learner FROM users WHERE username = 'bob'").scalar(), "autocast")
        is not None
    )
    grade_as(app, sid, "pass")
    mine = ada.get(f"/api/submissions/{sid}").get_json()
    assert mine["status"] == "done" and mine["result_status"] is None and mine["held_until"] > now
    assert "result-held" in ada.get(f"/submissions/{sid}").get_data(as_text=True)
    assert ada.get("/api/lessons/autocast").get_json()["progress"] == "attempted"  # not "passed" yet
    assert ada.get("/api/lessons/autocast/submissions").get_json()["submissions"][0]["result_status"] is None
    course_page = ada.get(f"/courses/{course_id}").get_data(as_text=True)
    assert 'data-lesson-id="autocast" data-progress="attempted"' in course_page
    assert teacher.get(f"/api/submissions/{sid}").get_json()["result_status"] == "pass"  # the instructor sees it

    set_window(teacher, course_id, now - 3 * HOUR, now - 2 * HOUR, hold=True)
    closed = post(ada)
    assert closed.status_code == 403 and "closed at" in closed.get_json()["error"]
    assert ada.get(f"/api/submissions/{sid}").get_json()["result_status"] == "pass"  # held until the close only
    assert ada.get("/api/lessons/autocast").get_json()["progress"] == "passed"

    log = teacher.get(f"/teach/courses/{course_id}/exam").get_data(as_text=True)
    outcomes = re.findall(r'<tr data-username="(\w+)" data-outcome="(\w+)">', log)
    assert outcomes == [("ada", "closed"), ("ada", "accepted"), ("ada", "early"), ("ada", "early")]
    db.close()

"""Regrading a course lesson after its lesson file changed (webapp/regrades.py): a real course whose learners'
submissions were really graded, the lesson's parity threshold tightened, the regrade previewed (only the
learners who flip are listed), applied (the gradebook follows), and both verdicts kept in the history. The
pages' own flow (start, progress, cancel, apply) runs on scripted verdicts: no grading needed there."""

import csv
import hashlib
import io
import re
import shutil
from pathlib import Path

from click.testing import CliRunner
from webapp_testing import base_config, csrf_headers, form, grade_as, make_instructor, signin, signup

import grader
from grader.lesson.loader import load_exercise
from webapp import cli, create_app, regrades, signals
from webapp.db import connect

AUTOCAST = load_exercise("autocast")


def enrolled_class(app, names, lesson="autocast"):
    """An instructor's course of `lesson` and one signed-in client per learner who joined it."""
    make_instructor(app, "teacher")
    teacher = app.test_client()
    signin(teacher, "teacher")
    made = form(teacher, "/teach/courses/new", {"name": "AMP", f"lesson-{lesson}": "on", f"position-{lesson}": "1"})
    url = made.headers["Location"]
    code = re.search(r'data-testid="join-code-value">(\w+)<', teacher.get(url).get_data(as_text=True)).group(1)
    learners = {}
    for name in names:
        learners[name] = app.test_client()
        signup(learners[name], name)
        form(learners[name], "/courses/join", {"code": code})
    return teacher, int(url.rstrip("/").split("/")[-1]), learners


def send(client, code, lesson="autocast") -> str:
    response = client.post(f"/api/lessons/{lesson}/submissions", json={"code": code}, headers=csrf_headers(client))
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def test_a_tightened_threshold_regrade_lists_exactly_who_flips_and_apply_moves_the_gradebook(tmp_path, monkeypatch):
    lessons = tmp_path / "lessons"
    lessons.mkdir()
    lesson_file = lessons / "autocast.yaml"
    shutil.copy(Path(grader.__file__).parent.parent / "exercises" / "autocast.yaml", lesson_file)
    app = create_app(base_config(tmp_path, EXERCISES=str(lessons)))
    teacher, course_id, learners = enrolled_class(app, ("ada", "bob", "cyd"))
    ada, bob = send(learners["ada"], AUTOCAST.reference), send(learners["bob"], AUTOCAST.starter)
    queue = app.extensions["amp_dojo_queue"]
    assert queue.run_pending() == 2
    for client, sid in ((learners["ada"], ada), (learners["bob"], bob)):
        assert client.get(f"/api/submissions/{sid}").get_json()["status"] == "done"
    db = connect(app.config["DATABASE"])
    before = hashlib.sha256(lesson_file.read_bytes()).hexdigest()
    stored = db.execute("SELECT lesson_hash, grader_version, result_status FROM submissions WHERE id = ?", (ada,))
    assert tuple(stored.fetchone()) == (before, grader.__version__, "pass")

    # The reference's loss is within 0.2% of FP32's: a 0.01% tolerance fails it; the starter fails either way.
    text = lesson_file.read_text()
    assert "bfloat16: {loss_rtol: 0.02," in text
    lesson_file.write_text(text.replace("bfloat16: {loss_rtol: 0.02,", "bfloat16: {loss_rtol: 0.0001,"))
    monkeypatch.setattr(cli, "_app", lambda: app)
    run = CliRunner().invoke(cli.main, ["regrade", str(course_id), "autocast", "--inline", "--apply"])
    assert run.exit_code == 0, run.output
    flipped = [line.split("\t") for line in run.stdout.splitlines() if "\t" in line]
    assert [f[:2] for f in flipped] == [["ada", "pass to fail"]], run.output
    assert "applied: 1 verdicts changed" in run.output

    assert [v["status"] for v in regrades.history(db, ada)] == ["pass", "fail"]
    (first, now) = regrades.history(db, ada)
    assert first["lesson_hash"] == before and now["lesson_hash"] == hashlib.sha256(lesson_file.read_bytes()).hexdigest()
    assert [v["status"] for v in regrades.history(db, bob)] == ["fail", "fail"]
    book = {
        r["username"]: r
        for r in csv.DictReader(
            io.StringIO(teacher.get(f"/teach/courses/{course_id}/gradebook.csv?style=comma").get_data(as_text=True))
        )
    }
    assert book["ada"]["autocast passed at"] == "" and book["cyd"]["autocast passed at"] == ""
    assert learners["ada"].get("/api/lessons").get_json()["lessons"][0]["progress"] in ("attempted",)
    db.close()


def scripted(status: str) -> dict:
    """A worker's outcome of a regrade step, as webapp/regrade_jobs.py reports it (no grading)."""
    check = {
        "id": "parity",
        "status": "fail" if status == "fail" else "pass",
        "message": "",
        "measured": {},
        "threshold": None,
        "weight": 1.0,
        "findings": [{"id": "parity_loss", "message": "loss too far", "fix": "f", "line": 3, "severity": "error"}]
        if status == "fail"
        else [],
    }
    result = {
        "status": status,
        "score": 1.0 if status == "pass" else 0.4,
        "checks": [check],
        "output": "",
        "plots": {},
        "error": None,
    }
    return {"status": "done", "result": result, "lesson_hash": "new", "grader_version": "9"}


def test_the_regrade_pages_preview_both_flips_below_learners_then_cancel_and_apply(app):
    teacher, course_id, learners = enrolled_class(app, ("ada", "bob"), lesson="grad_scaler")
    ada, bob = send(learners["ada"], "x = 1", "grad_scaler"), send(learners["bob"], "x = 2", "grad_scaler")
    grade_as(app, ada, "pass")
    grade_as(app, bob, "fail")
    queue = app.extensions["amp_dojo_queue"]
    queue.huey.flush()  # the scripted gradings' tasks

    started = form(teacher, f"/teach/courses/{course_id}/regrades", {"lesson": "grad_scaler"})
    assert started.status_code == 303
    page_url = started.headers["Location"]
    page = teacher.get(page_url).get_data(as_text=True)
    assert 'data-state="running"' in page and "0 of 2 submissions graded again" in page
    later = send(learners["ada"], "x = 3", "grad_scaler")  # a learner's grading, asked for after the regrade
    task = queue.huey.dequeue()
    assert task.args[0]["submission_id"] == later  # goes first
    rid = int(page_url.rstrip("/").split("/")[-1])
    queue.huey.flush()  # the regrade's own step: its verdicts come scripted instead
    queue.put("regrade", ada, rid, scripted("fail"))
    queue.put("regrade", bob, rid, scripted("pass"))
    page = teacher.get(page_url).get_data(as_text=True)
    assert 'data-state="previewed"' in page and "2 of 2" in page
    flips = dict(re.findall(r'<tr data-username="(\w+)" data-direction="(\w+)">', page))
    assert flips == {"ada": "pass_to_fail", "bob": "fail_to_pass"} and "loss too far" in page

    other = form(teacher, f"/teach/courses/{course_id}/regrades", {"lesson": "grad_scaler"}).headers["Location"]
    form(teacher, other + "/cancel", {})
    assert 'data-state="cancelled"' in teacher.get(other).get_data(as_text=True)
    queue.run_pending()  # the cancelled regrade's step finds its cancel key and grades nothing
    db = connect(app.config["DATABASE"])
    assert regrades.progress(db, int(other.rsplit("/", 1)[-1]))["done"] == 0

    heard = []  # what an LMS's gradebook (webapp/lti, a listener of signals.graded) hears of the applied verdicts

    def listener(_sender, row, result, **_extra):
        heard.append((row["learner"], result["status"]))

    signals.graded.connect(listener)
    try:
        form(teacher, page_url + "/apply", {})
    finally:
        signals.graded.disconnect(listener)
    assert 'data-state="applied"' in teacher.get(page_url).get_data(as_text=True)
    assert sorted(status for _learner, status in heard) == ["fail", "pass"]
    book = {
        r["username"]: r
        for r in csv.DictReader(
            io.StringIO(teacher.get(f"/teach/courses/{course_id}/gradebook.csv?style=comma").get_data(as_text=True))
        )
    }
    assert book["ada"]["grad_scaler passed at"] == "" and book["bob"]["grad_scaler passed at"] != ""
    assert [v["status"] for v in regrades.history(db, bob)] == ["fail", "pass"]
    db.close()
    assert form(learners["ada"], page_url + "/apply", {}).status_code in (403, 404)  # instructors only

"""Every view of a learner's counted score on a course lesson is one number (webapp/deadlines.py counted_scores):
the learner's course page, the instructor's learner page, the gradebook CSV and the score sent to the LMS. Graded
submissions are rows written straight into the database: no grading, no queue."""

import csv
import io
import re
import time
import uuid
from datetime import datetime, timezone

from test_regrade import enrolled_class

from webapp import deadlines, exams
from webapp.db import connect
from webapp.late_policy import LatePolicy
from webapp.lti.scores import counted_score

HOUR = 3600.0


def graded(db, learner: str, lesson: str, score: float, at: float) -> None:
    """A submission of `learner` made at `at` and graded `score`, as the collector stores one."""
    db.execute(
        "INSERT INTO submissions (id, learner, lesson, code, status, created_at, queued_at, result_status, score) "
        "VALUES (?, ?, ?, 'x = 1', 'done', ?, ?, ?, ?)",
        (uuid.uuid4().hex, learner, lesson, at, at, "pass" if score == 1.0 else "fail", score),
    )


def every_view(app, teacher, learners: dict, course_id: int, lesson: str) -> dict[str, dict[str, str]]:
    """name -> {view: the counted score it shows}, as a whole percentage (the pages round to one)."""
    book = csv.DictReader(io.StringIO(teacher.get(f"/teach/courses/{course_id}/gradebook.csv").get_data(as_text=True)))
    in_book = {r["username"]: r[f"{lesson} counted score"] for r in book}
    out = {}
    with connect(app.config["DATABASE"]) as db:
        for name, client in learners.items():
            user = db.execute("SELECT id, learner FROM users WHERE username = ?", (name,)).fetchone()
            lms = counted_score(db, user["learner"], course_id, lesson)
            out[name] = {
                "course page": _cell(client.get(f"/courses/{course_id}").get_data(as_text=True), lesson),
                "learner page": _cell(
                    teacher.get(f"/teach/courses/{course_id}/learners/{user['id']}").get_data(as_text=True), lesson
                ),
                "gradebook": "–" if not in_book[name] else f"{round(float(in_book[name]) * 100)}%",
                "lms": "–" if lms is None else f"{round(lms * 100)}%",
            }
    return out


def _cell(html: str, lesson: str) -> str:
    row = re.search(rf'<tr data-lesson-id="{lesson}"[^>]*>(.*?)</tr>', html, re.S).group(1)
    return re.search(r'data-testid="counted-score">([^<]*)<', row).group(1)


def test_exam_held_verdict_counts_nowhere_a_learner_or_the_lms_sees_until_released(app):
    teacher, course_id, learners = enrolled_class(app, ("ada",))
    now = time.time()
    with connect(app.config["DATABASE"]) as db:
        ada, user_id = db.execute("SELECT learner, id FROM users WHERE username = 'ada'").fetchone()
        db.execute("UPDATE users SET created_at = ? WHERE id = ?", (now - 3 * HOUR, user_id))  # joined before
        graded(db, ada, "autocast", 0.5, now - 2 * HOUR)  # before the exam: released
        exams.save(db, course_id, now - HOUR, now + HOUR, ["autocast"], hold=True)
        graded(db, ada, "autocast", 1.0, now - HOUR / 2)  # inside the window: held until it closes
    held = every_view(app, teacher, learners, course_id, "autocast")
    assert held == {"ada": dict.fromkeys(("course page", "learner page", "gradebook", "lms"), "50%")}
    learner_page = f"/teach/courses/{course_id}/learners/{user_id}"
    assert 'data-testid="counted-held"' in teacher.get(learner_page).get_data(as_text=True)  # the instructor knows

    with connect(app.config["DATABASE"]) as db:
        exams.save(db, course_id, now - HOUR, now - 1, ["autocast"], hold=True)  # the exam closed: released
    assert every_view(app, teacher, learners, course_id, "autocast") == {
        "ada": dict.fromkeys(("course page", "learner page", "gradebook", "lms"), "100%")
    }
    assert 'data-testid="counted-held"' not in teacher.get(learner_page).get_data(as_text=True)


def test_a_late_learner_with_an_extension_under_a_penalty_counts_the_same_in_every_view(app):
    teacher, course_id, learners = enrolled_class(app, ("ada", "bob"))
    deadline = datetime(2030, 1, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()
    day = 86400.0
    with connect(app.config["DATABASE"]) as db:
        db.execute("UPDATE course_lessons SET deadline = ? WHERE course_id = ?", (deadline, course_id))
        deadlines.set_policy(db, course_id, LatePolicy("penalty", per_day=0.1, floor=0.5))
        who = {r["username"]: r for r in db.execute("SELECT id, username, learner FROM users").fetchall()}
        deadlines.grant(db, course_id, who["ada"]["id"], "autocast", deadline + 2 * day, "ill", who["ada"]["id"])
        graded(db, who["ada"]["learner"], "autocast", 1.0, deadline + 3.5 * day)  # 1.5 days past her extension
        graded(db, who["ada"]["learner"], "autocast", 0.7, deadline - day)  # on time, but less than 1.0 * 0.8
        graded(db, who["bob"]["learner"], "autocast", 1.0, deadline + 3.5 * day)  # 4 started days: 1.0 * 0.6
    views = every_view(app, teacher, learners, course_id, "autocast")
    assert views["ada"] == dict.fromkeys(("course page", "learner page", "gradebook", "lms"), "80%")
    assert views["bob"] == dict.fromkeys(("course page", "learner page", "gradebook", "lms"), "60%")

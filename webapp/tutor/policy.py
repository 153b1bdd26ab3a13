"""Who may ask the tutor, and how much. `tutor_allowed` is the one switch: no endpoint configured, a course that
turned the tutor off and an exam in force (webapp/exams.py) all answer there. Quotas are rows of
tutor_questions, so they hold across every app process sharing the database."""

from __future__ import annotations

import time

from flask import current_app

from webapp.db import transaction
from webapp.i18n import noop_gettext
from webapp.tutor.client import endpoint_from

OFF = noop_gettext("The tutor is not set up on this server.")
COURSE_OFF = noop_gettext("Your instructor has turned the tutor off for this course.")
EXAM = noop_gettext("The tutor is off during an exam.")
PER_DAY = noop_gettext(
    "You have asked the tutor {n} questions in the last 24 hours, the most allowed. Try again later."
)
PER_SUBMISSION = noop_gettext(
    "You have asked {n} questions about this result, the most allowed. Change your code, run it, and ask about the "
    "new result."
)
DAY_S = 24 * 3600


def enabled(config) -> bool:
    return endpoint_from(config) is not None


def tutor_allowed(user, course, lesson: str) -> tuple[bool, str]:
    """Whether `user` may ask the tutor about `lesson` within `course` (a courses row, or None outside any course),
    and if not, why (an interface string). The exam term's lockdown is to be added here."""
    if not enabled(current_app.config):
        return False, OFF
    if course is not None and not course["tutor_enabled"]:
        return False, COURSE_OFF
    return True, ""


def allowed_here(db, user, lesson: str) -> tuple[bool, str]:
    """tutor_allowed for every course of the user's that holds the lesson (every one must allow it), or outside
    any course for a learner in none (an anonymous one included)."""
    if not enabled(current_app.config):
        return False, OFF
    courses = []
    if user is not None and getattr(user, "is_authenticated", False):
        courses = db.execute(
            "SELECT c.* FROM courses c JOIN enrollments e ON e.course_id = c.id "
            "JOIN course_lessons cl ON cl.course_id = c.id WHERE e.user_id = ? AND cl.lesson = ?",
            (user.id, lesson),
        ).fetchall()
    for course in courses or [None]:
        ok, why = tutor_allowed(user, course, lesson)
        if not ok:
            return ok, why
    from webapp import exams
    from webapp.security import learner_id

    if exams.exam_in_force(db, learner_id(), lesson) is not None:  # hints and quiz explanations are off too
        return False, EXAM
    return True, ""


def over_quota(db, config, learner: str, submission_id: str, now: float | None = None) -> tuple[str, dict] | None:
    """(message, values) when this question would pass a quota, else None."""
    now = time.time() if now is None else now
    per_day = int(config.get("TUTOR_QUESTIONS_PER_DAY") or 0)
    per_submission = int(config.get("TUTOR_QUESTIONS_PER_SUBMISSION") or 0)
    if per_submission:
        asked = db.execute("SELECT count(*) FROM tutor_questions WHERE submission_id = ?", (submission_id,)).scalar()
        if asked >= per_submission:
            return PER_SUBMISSION, {"n": per_submission}
    if per_day:
        asked = db.execute(
            "SELECT count(*) FROM tutor_questions WHERE learner = ? AND asked_at > ?", (learner, now - DAY_S)
        ).scalar()
        if asked >= per_day:
            return PER_DAY, {"n": per_day}
    return None


def record(db, learner: str, lesson: str, submission_id: str, question: str | None) -> int:
    """Counts the question (before it is answered: a failed answer still counts); its text only if given."""
    with transaction(db):
        db.execute(
            "INSERT INTO tutor_questions (learner, lesson, submission_id, asked_at, question) VALUES (?, ?, ?, ?, ?)",
            (learner, lesson, submission_id, time.time(), question),
        )
        return db.execute(
            "SELECT max(id) FROM tutor_questions WHERE learner = ? AND submission_id = ?", (learner, submission_id)
        ).scalar()


def keep_answer(database: str, question_id: int, answer: str) -> None:
    """After the stream (its request's connection is gone): the answer's text, where the admin keeps texts."""
    from webapp.db import connect

    db = connect(database)
    try:
        with transaction(db):
            db.execute("UPDATE tutor_questions SET answer = ? WHERE id = ?", (answer, question_id))
    finally:
        db.close()


def switch(db, course_id: int, on: bool) -> None:
    """The course's own switch (its instructors', on the course's edit page)."""
    with transaction(db):
        db.execute("UPDATE courses SET tutor_enabled = ? WHERE id = ?", (bool(on), course_id))


def questions_per_lesson(db, course_id: int) -> dict[str, int]:
    """For the dashboard: how many questions the course's learners asked about each of its lessons (never what)."""
    rows = db.execute(
        "SELECT q.lesson, count(*) AS n FROM tutor_questions q JOIN users u ON u.learner = q.learner "
        "JOIN enrollments e ON e.user_id = u.id AND e.course_id = ? "
        "JOIN course_lessons cl ON cl.course_id = e.course_id AND cl.lesson = q.lesson GROUP BY q.lesson",
        (course_id,),
    ).fetchall()
    return {r["lesson"]: r["n"] for r in rows}

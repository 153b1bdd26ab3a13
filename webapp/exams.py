"""Exam mode: a course (or some of its lessons) with a time window, stored in UTC seconds. Outside the window
the lessons it covers take no submission from the course's learners (the web form, the API and `grader submit`
all store through webapp/store.py create, which asks `admit`), and the reason says when it opens or closed;
inside it, hints, quiz explanations and the tutor are off (`exam_in_force`, the one question every such
feature asks), and the results may be held back until the window closes (`held`). Every attempt, accepted or
refused, is logged with its time for the course's instructors. When held results become visible (the window's
close, or an instructor's change that ends the hold) webapp.signals.released says so, for an LMS's gradebook."""

from __future__ import annotations

import json
import time

from webapp import signals
from webapp.db import transaction
from webapp.i18n import Moment, noop_gettext

OPENS = noop_gettext(
    "This lesson is part of an exam that opens at {start}: submissions are accepted from then until {end}."
)
CLOSED = noop_gettext("The exam for this lesson closed at {end}: submissions are no longer accepted.")


class ExamError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def get(db, course_id: int):
    return db.execute("SELECT * FROM course_exams WHERE course_id = ?", (course_id,)).fetchone()


def lessons_of(exam) -> list[str] | None:
    """The lessons the exam covers; None: all of its course's."""
    return None if exam is None or exam["lessons"] is None else json.loads(exam["lessons"])


def save(db, course_id: int, starts_at: float, ends_at: float, lessons: list[str] | None, hold: bool, config=None):
    """The course's exam window, replacing the one it had. `config` is the app's, for the listeners of `released`."""
    if not ends_at > starts_at:
        raise ExamError(noop_gettext("An exam's window must end after it starts."))
    before = get(db, course_id)
    with transaction(db):
        db.execute("DELETE FROM course_exams WHERE course_id = ?", (course_id,))
        db.execute(
            "INSERT INTO course_exams (course_id, starts_at, ends_at, lessons, hold_results, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (course_id, starts_at, ends_at, None if lessons is None else json.dumps(lessons), int(hold), time.time()),
        )
    _ended(db, before, config)
    if hold:
        signals.released.send(None, db=db, course_id=course_id, lessons=lessons, at=ends_at, config=config)


def clear(db, course_id: int, config=None) -> None:
    before = get(db, course_id)
    with transaction(db):
        db.execute("DELETE FROM course_exams WHERE course_id = ?", (course_id,))
    _ended(db, before, config)


def _ended(db, before, config) -> None:
    """The window `before` was replaced or cleared: what it held until its close is (or, held by the new one,
    stays) held no more. Listeners count again and find which."""
    now = time.time()
    if before is not None and before["hold_results"] and now < before["ends_at"]:
        signals.released.send(
            None, db=db, course_id=before["course_id"], lessons=lessons_of(before), at=now, config=config
        )


def covering(db, learner: str, lesson: str) -> list:
    """The exams of the courses this learner joined that cover this lesson."""
    rows = db.execute(
        "SELECT x.* FROM course_exams x JOIN enrollments e ON e.course_id = x.course_id "
        "JOIN users u ON u.id = e.user_id AND u.learner = ? "
        "JOIN course_lessons cl ON cl.course_id = x.course_id AND cl.lesson = ?",
        (learner, lesson),
    ).fetchall()
    return [x for x in rows if lessons_of(x) is None or lesson in lessons_of(x)]


def exam_in_force(db, learner: str, lesson: str, now: float | None = None):
    """The exam whose window this learner is inside for this lesson now, or None. Hints, quiz explanations and
    the tutor ask this and stay off while it answers an exam."""
    now = time.time() if now is None else now
    return next((x for x in covering(db, learner, lesson) if x["starts_at"] <= now < x["ends_at"]), None)


def admit(db, learner: str, lesson: str, now: float) -> tuple[list[int], tuple[str, dict] | None]:
    """(the courses whose exams take this submission, to log it as accepted; None) or, when one of them is
    outside its window, ([], (the reason, its values)) with the refusal logged: webapp/store.py create refuses
    it (403) in the learner's language."""
    exams = covering(db, learner, lesson)
    for exam in exams:
        if now < exam["starts_at"] or now >= exam["ends_at"]:
            early = now < exam["starts_at"]
            log(db, [exam["course_id"]], learner, lesson, None, "early" if early else "closed", now)
            return [], (
                OPENS if early else CLOSED,
                {"start": Moment(exam["starts_at"]), "end": Moment(exam["ends_at"])},
            )
    return [exam["course_id"] for exam in exams], None


def log(db, course_ids: list[int], learner: str, lesson: str, sid: str | None, outcome: str, now: float) -> None:
    for course_id in course_ids:
        db.execute(
            "INSERT INTO exam_attempts (course_id, learner, lesson, submission_id, outcome, at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (course_id, learner, lesson, sid, outcome, now),
        )


def attempts(db, course_id: int, limit: int = 500) -> list:
    """The course's exam log, newest first, with the learners' usernames."""
    return db.execute(
        "SELECT a.*, u.username, u.id AS user_id FROM exam_attempts a JOIN users u ON u.learner = a.learner "
        "WHERE a.course_id = ? ORDER BY a.at DESC, a.id DESC LIMIT ?",
        (course_id, limit),
    ).fetchall()


def held(db, row, now: float | None = None) -> float | None:
    """When the verdict of this submission may be shown to its learner, if an exam holds it back (its window
    had the submission and has not closed yet); else None."""
    now = time.time() if now is None else now
    for exam in covering(db, row["learner"], row["lesson"]):
        if exam["hold_results"] and exam["starts_at"] <= row["created_at"] < exam["ends_at"] and now < exam["ends_at"]:
            return exam["ends_at"]
    return None


def mask(data: dict, until: float) -> dict:
    """A submission as its learner sees it while its verdict is held: graded or not, no verdict, score or check."""
    data = dict(data)
    for key in ("result_status", "score"):
        if key in data:
            data[key] = None
    if data.get("result") is not None:  # the same shape, with nothing in it (the page's panel draws it empty)
        data["result"] = {"status": "held", "score": None, "checks": [], "output": "", "plots": {}, "error": None}
    if "events" in data:
        data["events"] = [e for e in data["events"] if e.get("type") != "check"]
    data["held_until"] = until
    return data


def without_help(lesson: dict, exam) -> dict:
    """A lesson's public data while an exam is in force: no hints (and the page says why)."""
    if exam is None:
        return lesson
    return {**lesson, "hints": [], "exam": {"ends_at": exam["ends_at"], "hold_results": bool(exam["hold_results"])}}


def holding(db, learner: str, now: float | None = None) -> dict[str, tuple[float, float]]:
    """lesson -> (when its exam's window opened, when it closes), for the lessons whose results an exam holds
    back from this learner now: a verdict of a submission made since the opening is not theirs to see yet (nor
    the pass it made)."""
    now = time.time() if now is None else now
    rows = db.execute(
        "SELECT x.lessons, x.starts_at, x.ends_at, cl.lesson FROM course_exams x "
        "JOIN enrollments e ON e.course_id = x.course_id JOIN users u ON u.id = e.user_id AND u.learner = ? "
        "JOIN course_lessons cl ON cl.course_id = x.course_id "
        "WHERE x.hold_results = 1 AND x.starts_at <= ? AND ? < x.ends_at",
        (learner, now, now),
    ).fetchall()
    return {
        r["lesson"]: (r["starts_at"], r["ends_at"])
        for r in rows
        if r["lessons"] is None or r["lesson"] in json.loads(r["lessons"])
    }

"""Each learner's own deadlines in a course: the lesson's deadline, unless an instructor granted that learner an
extension (a new deadline, with a note), and the course's late policy (webapp/late_policy.py), kept in the
database. What a learner's work counts is computed here from their graded submissions, with the one function
that the LMS passback calls too (`late_policy.counted_score`)."""

from __future__ import annotations

import time

from webapp import late_policy
from webapp.db import transaction
from webapp.i18n import noop_gettext
from webapp.late_policy import LatePolicy

MAX_NOTE = 500


def policy(db, course_id: int) -> LatePolicy:
    row = db.execute("SELECT late_policy, late_per_day, late_floor FROM courses WHERE id = ?", (course_id,)).fetchone()
    return LatePolicy() if row is None else LatePolicy(row[0], float(row[1]), float(row[2]))


def set_policy(db, course_id: int, chosen: LatePolicy) -> None:
    db.execute(
        "UPDATE courses SET late_policy = ?, late_per_day = ?, late_floor = ? WHERE id = ?",
        (chosen.kind, chosen.per_day, chosen.floor, course_id),
    )


def grant(db, course_id: int, user_id: int, lesson: str, deadline: float, note: str, granted_by: int) -> None:
    """One learner's new deadline for one lesson (a second grant replaces the first); nobody else's moves."""
    note = " ".join((note or "").split())
    if len(note) > MAX_NOTE:
        raise late_policy.PolicyError(noop_gettext("A note is at most 500 characters."))
    with transaction(db):
        db.execute(
            "DELETE FROM extensions WHERE course_id = ? AND user_id = ? AND lesson = ?", (course_id, user_id, lesson)
        )
        db.execute(
            "INSERT INTO extensions (course_id, user_id, lesson, deadline, note, granted_by, granted_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (course_id, user_id, lesson, deadline, note, granted_by, time.time()),
        )


def revoke(db, course_id: int, user_id: int, lesson: str) -> None:
    db.execute(
        "DELETE FROM extensions WHERE course_id = ? AND user_id = ? AND lesson = ?", (course_id, user_id, lesson)
    )


def extensions(db, course_id: int, user_id: int | None = None) -> dict[tuple[int, str], dict]:
    """(user id, lesson) -> {"deadline", "note", "granted_at"} of the course's extensions (one learner's)."""
    sql = "SELECT user_id, lesson, deadline, note, granted_at FROM extensions WHERE course_id = ?"
    params: tuple = (course_id,)
    if user_id is not None:
        sql += " AND user_id = ?"
        params += (user_id,)
    return {(r[0], r[1]): {"deadline": r[2], "note": r[3], "granted_at": r[4]} for r in db.execute(sql, params).rows()}


def deadline_of(lessons: list, granted: dict, user_id: int) -> list[float | None]:
    """A learner's deadline for each of the course's lessons (in their order): their extension's, else the
    lesson's."""
    return [
        granted[(user_id, item["lesson"])]["deadline"] if (user_id, item["lesson"]) in granted else item["deadline"]
        for item in lessons
    ]


def graded(db, course_id: int, learner: str | None = None) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(learner, lesson) -> [(raw score, when it counts)] of the course's learners' graded submissions. A
    submission taken over at sign-up counts from the sign-up, as its pass does (webapp/learner_lessons.py)."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    rows = db.execute(
        "SELECT s.learner, s.lesson, s.score, s.created_at, u.created_at FROM enrollments e "
        "JOIN users u ON u.id = e.user_id JOIN submissions s ON s.learner = u.learner "
        "JOIN course_lessons cl ON cl.course_id = e.course_id AND cl.lesson = s.lesson "
        "WHERE e.course_id = ? AND s.score IS NOT NULL" + (" AND u.learner = ?" if learner is not None else ""),
        (course_id,) + ((learner,) if learner is not None else ()),
    ).rows()
    for learner, lesson, score, created_at, account_at in rows:
        out.setdefault((learner, lesson), []).append((score, max(created_at, account_at or 0)))
    return out

"""Each learner's own deadlines in a course: the lesson's deadline, unless an instructor granted that learner an
extension (a new deadline, with a note), and the course's late policy (webapp/late_policy.py), kept in the
database. What a learner's work counts on a lesson (`counted_scores`) is decided here, once, for every page and
the LMS passback: their own deadline, their graded submissions whose verdicts they may see, the course's policy."""

from __future__ import annotations

import time
from dataclasses import dataclass

from webapp import exams, late_policy
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


@dataclass(frozen=True)
class Counted:
    """One learner's lesson as it counts: their deadline, the extension that set it (None: the lesson's), the
    best counted score of the verdicts released to them (what they, the gradebook and the LMS all see), and when
    the verdicts an exam holds back are released (None: none is held)."""

    deadline: float | None
    extension: dict | None
    score: float | None
    held_until: float | None


def counted_scores(
    db, course_id: int, people: list, lessons: list, now: float | None = None
) -> dict[tuple[str, str], Counted]:
    """(learner, lesson) -> Counted for each of `people` (rows with "id" and "learner") on each of `lessons` (rows
    with "lesson" and "deadline"), in three queries whatever the class's size. A verdict an exam holds back counts
    nowhere until the exam closes: not on the learner's page, in the gradebook or at the LMS (which would show it
    to the learner), so that every view of the score is the same number; the instructor's pages say it is held."""
    one = people[0] if len(people) == 1 else None
    chosen = policy(db, course_id)
    granted = extensions(db, course_id, one["id"] if one else None)
    entries = graded(db, course_id, one["learner"] if one else None, now)
    out = {}
    for person in people:
        for item, deadline in zip(lessons, deadline_of(lessons, granted, person["id"])):
            mine = entries.get((person["learner"], item["lesson"]), [])
            released = [(raw, at) for raw, at, until in mine if until is None]
            held = [until for _raw, _at, until in mine if until is not None]
            out[(person["learner"], item["lesson"])] = Counted(
                deadline,
                granted.get((person["id"], item["lesson"])),
                late_policy.best_counted(released, deadline, chosen),
                max(held) if held else None,
            )
    return out


def graded(
    db, course_id: int, learner: str | None = None, now: float | None = None
) -> dict[tuple[str, str], list[tuple[float, float, float | None]]]:
    """(learner, lesson) -> [(raw score, when it counts, when an exam releases its verdict: None if not held)] of
    the course's learners' graded submissions. A submission taken over at sign-up counts from the sign-up, as its
    pass does (webapp/learner_lessons.py). A verdict is held as `exams.held` decides for one submission: an exam
    of any course its learner joined that holds results, covers its lesson, had it in its window and is open."""
    now = time.time() if now is None else now
    rows = db.execute(
        "SELECT s.id, s.learner, s.lesson, s.score, s.created_at, u.created_at AS account_at, x.lessons, x.ends_at "
        "FROM enrollments e JOIN users u ON u.id = e.user_id JOIN submissions s ON s.learner = u.learner "
        "JOIN course_lessons cl ON cl.course_id = e.course_id AND cl.lesson = s.lesson "
        "LEFT JOIN course_exams x ON x.hold_results = 1 AND x.starts_at <= s.created_at "
        "AND s.created_at < x.ends_at AND ? < x.ends_at AND x.course_id IN (SELECT h.course_id FROM enrollments h "
        "JOIN course_lessons hl ON hl.course_id = h.course_id AND hl.lesson = s.lesson WHERE h.user_id = u.id) "
        "WHERE e.course_id = ? AND s.score IS NOT NULL" + (" AND u.learner = ?" if learner is not None else ""),
        (now, course_id) + ((learner,) if learner is not None else ()),
    ).fetchall()
    held: dict[str, float] = {}  # submission -> when the last exam holding it closes
    for r in rows:
        if r["ends_at"] is not None and (exams.lessons_of(r) is None or r["lesson"] in exams.lessons_of(r)):
            held[r["id"]] = max(held.get(r["id"], 0.0), r["ends_at"])
    out: dict[tuple[str, str], list[tuple[float, float, float | None]]] = {}
    seen = set()
    for r in rows:  # one row per exam in whose window the submission was made (or one, with none)
        if r["id"] not in seen:
            seen.add(r["id"])
            at = max(r["created_at"], r["account_at"] or 0)
            out.setdefault((r["learner"], r["lesson"]), []).append((r["score"], at, held.get(r["id"])))
    return out

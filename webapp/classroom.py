"""Courses in the web app's database: an ordered list of lessons (each with an
optional deadline), the instructors who teach it, the learners who joined it
with its code, and what the dashboard and gradebook compute from the learners'
submissions. Who may read what is decided here too (`can_read`)."""

from __future__ import annotations

import secrets
import statistics
import time
from dataclasses import dataclass, field

from webapp.db import transaction
from webapp.i18n import noop_gettext

JOIN_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud in a classroom
JOIN_CODE_LENGTH = 8
MAX_NAME = 120


class CourseError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def new_join_code() -> str:
    return "".join(secrets.choice(JOIN_ALPHABET) for _ in range(JOIN_CODE_LENGTH))


def normalise_code(code: str) -> str:
    return "".join(c for c in (code or "").upper() if c.isalnum())


def _checked(name: str, lessons: list[tuple[str, float | None]]) -> str:
    name = " ".join((name or "").split())
    if not name or len(name) > MAX_NAME:
        raise CourseError(noop_gettext("A course needs a name of at most 120 characters."))
    if not lessons:
        raise CourseError(noop_gettext("Pick at least one lesson for the course."))
    return name


def _insert_lessons(db, course_id: int, lessons: list[tuple[str, float | None]]) -> None:
    for position, (lesson, deadline) in enumerate(lessons, 1):
        db.execute(
            "INSERT INTO course_lessons (course_id, lesson, position, deadline) VALUES (?, ?, ?, ?)",
            (course_id, lesson, position, deadline),
        )


def create(db, name: str, lessons: list[tuple[str, float | None]], instructor_id: int) -> int:
    """A course with its lessons in the given order; the instructor teaches it."""
    name = _checked(name, lessons)
    now = time.time()
    with transaction(db):
        code = new_join_code()
        while db.execute("SELECT 1 FROM courses WHERE join_code = ?", (code,)).fetchone():
            code = new_join_code()
        db.execute(
            "INSERT INTO courses (name, join_code, created_by, created_at) VALUES (?, ?, ?, ?)",
            (name, code, instructor_id, now),
        )
        course_id = db.execute("SELECT id FROM courses WHERE join_code = ?", (code,)).fetchone()[0]
        db.execute("INSERT INTO course_instructors (course_id, user_id) VALUES (?, ?)", (course_id, instructor_id))
        _insert_lessons(db, course_id, lessons)
    return course_id


def update(db, course_id: int, name: str, lessons: list[tuple[str, float | None]]) -> None:
    """A new name and a new list of lessons (order and deadlines) for the course. The learners stay, and their
    work on a lesson taken out of the course is kept (it counts again if the lesson comes back)."""
    name = _checked(name, lessons)
    with transaction(db):
        db.execute("UPDATE courses SET name = ? WHERE id = ?", (name, course_id))
        db.execute("DELETE FROM course_lessons WHERE course_id = ?", (course_id,))
        _insert_lessons(db, course_id, lessons)


def delete(db, course_id: int) -> None:
    """The course, its lessons, instructors and enrollments; the learners' accounts and submissions stay."""
    with transaction(db):
        for table in ("similarity_reports", "extensions", "enrollments", "course_instructors", "course_lessons"):
            db.execute(f"DELETE FROM {table} WHERE course_id = ?", (course_id,))
        db.execute("DELETE FROM courses WHERE id = ?", (course_id,))


def remove_learner(db, course_id: int, user_id: int) -> None:
    """The learner leaves the course (they may join again with its code); their submissions stay theirs."""
    with transaction(db):
        db.execute("DELETE FROM enrollments WHERE course_id = ? AND user_id = ?", (course_id, user_id))


def past_deadlines(lessons: list[tuple[str, float | None]], now: float | None = None) -> list[str]:
    """The lessons whose deadline is already over: allowed (a deadline may be set after the fact), but said."""
    now = time.time() if now is None else now
    return [lesson for lesson, deadline in lessons if deadline is not None and deadline < now]


def get(db, course_id: int):
    return db.execute("SELECT * FROM courses WHERE id = ?", (course_id,)).fetchone()


def teaches(db, course_id: int, user_id: int) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM course_instructors WHERE course_id = ? AND user_id = ?", (course_id, user_id)
        ).fetchone()
        is not None
    )


def enrolled(db, course_id: int, user_id: int) -> bool:
    return (
        db.execute("SELECT 1 FROM enrollments WHERE course_id = ? AND user_id = ?", (course_id, user_id)).fetchone()
        is not None
    )


def join(db, code: str, user_id: int):
    """The course whose join code this is (joined, or already joined), or None."""
    course = db.execute("SELECT * FROM courses WHERE join_code = ?", (normalise_code(code),)).fetchone()
    if course is None:
        return None
    db.execute(
        "INSERT INTO enrollments (course_id, user_id, joined_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (course["id"], user_id, time.time()),
    )
    return course


def enroll(db, course_id: int, user_id: int) -> None:
    """An instructor puts a learner in the course (a roster import); already in it: nothing changes."""
    db.execute(
        "INSERT INTO enrollments (course_id, user_id, joined_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (course_id, user_id, time.time()),
    )


def taught_by(db, user_id: int) -> list:
    return db.execute(
        "SELECT c.*, (SELECT count(*) FROM enrollments e WHERE e.course_id = c.id) AS learners "
        "FROM courses c JOIN course_instructors ci ON ci.course_id = c.id WHERE ci.user_id = ? "
        "ORDER BY c.created_at DESC",
        (user_id,),
    ).fetchall()


def joined_by(db, user_id: int) -> list:
    return db.execute(
        "SELECT c.* FROM courses c JOIN enrollments e ON e.course_id = c.id WHERE e.user_id = ? "
        "ORDER BY e.joined_at DESC",
        (user_id,),
    ).fetchall()


def lessons(db, course_id: int) -> list:
    return db.execute(
        "SELECT lesson, position, deadline FROM course_lessons WHERE course_id = ? ORDER BY position", (course_id,)
    ).fetchall()


def learners(db, course_id: int) -> list:
    return db.execute(
        "SELECT u.id, u.username, u.learner, e.joined_at FROM enrollments e JOIN users u "
        "ON u.id = e.user_id WHERE e.course_id = ? ORDER BY u.username_key",
        (course_id,),
    ).fetchall()


def learner_in(db, course_id: int, user_id: int):
    return db.execute(
        "SELECT u.id, u.username, u.learner, e.joined_at FROM enrollments e JOIN users u "
        "ON u.id = e.user_id WHERE e.course_id = ? AND u.id = ?",
        (course_id, user_id),
    ).fetchone()


def can_read(db, row, user, learner: str) -> bool:
    """A submission is readable by its learner, and by the instructors of a course that its learner
    joined and that includes its lesson; by no one else."""
    if row["learner"] == learner:
        return True
    if user is None or not user.is_authenticated or not user.is_instructor:
        return False
    return (
        db.execute(
            "SELECT 1 FROM users u JOIN enrollments e ON e.user_id = u.id "
            "JOIN course_lessons cl ON cl.course_id = e.course_id AND cl.lesson = ? "
            "JOIN course_instructors ci ON ci.course_id = e.course_id AND ci.user_id = ? "
            "WHERE u.learner = ? LIMIT 1",
            (row["lesson"], user.id, row["learner"]),
        ).fetchone()
        is not None
    )


# ---------- what the class did ----------


@dataclass
class Progress:
    """One learner's record on one lesson (webapp/learner_lessons.py keeps it)."""

    attempts: int = 0
    first_at: float | None = None
    passed_at: float | None = None  # the first passing submission
    attempts_to_pass: int | None = None
    best_score: float | None = None

    @property
    def state(self) -> str:
        return "passed" if self.passed_at is not None else "attempted" if self.attempts else "not_started"

    def late(self, deadline: float | None) -> bool:
        """Passed, the first pass after the lesson's deadline."""
        return deadline is not None and self.passed_at is not None and self.passed_at > deadline


def progress(db, course_id: int, learner: str | None = None) -> dict[tuple[str, str], Progress]:
    """(learner id, lesson) -> Progress, for the course's learners (or one) on the course's lessons."""
    sql = (
        "SELECT ll.learner, ll.lesson, ll.attempts, ll.first_at, ll.passed_at, ll.attempts_to_pass, ll.best_score "
        "FROM enrollments e JOIN users u ON u.id = e.user_id "
        "JOIN learner_lessons ll ON ll.learner = u.learner "
        "JOIN course_lessons cl ON cl.course_id = e.course_id AND cl.lesson = ll.lesson WHERE e.course_id = ?"
    )
    params: tuple = (course_id,)
    if learner is not None:
        sql += " AND u.learner = ?"
        params += (learner,)
    return {(r[0], r[1]): Progress(*r[2:]) for r in db.execute(sql, params).rows()}


@dataclass
class LessonStats:
    lesson: str
    passed: int = 0
    attempted: int = 0  # tried, not (yet) passed
    not_started: int = 0
    late: int = 0  # passed, the first pass after the deadline
    median_attempts: float | None = None  # submissions up to the first pass, among those who passed
    median_time_to_pass_s: float | None = None  # first submission to first pass, among those who passed
    passers: list = field(default_factory=list, repr=False)


def lesson_stats(
    lesson_ids: list[str],
    learner_ids: list[str],
    table: dict,
    deadlines: dict | None = None,
    own_deadlines: dict | None = None,
) -> list[LessonStats]:
    """Per lesson; a pass is late against the lesson's deadline (`deadlines`: lesson -> deadline), or against each
    learner's own (`own_deadlines`: learner -> deadlines in `lesson_ids`' order, an extension's where granted)."""
    stats = []
    for i, lesson in enumerate(lesson_ids):
        s = LessonStats(lesson)
        attempts, times = [], []
        for learner in learner_ids:
            if own_deadlines is not None and learner in own_deadlines:
                deadline = own_deadlines[learner][i]
            else:
                deadline = (deadlines or {}).get(lesson)
            p = table.get((learner, lesson))
            state = p.state if p else "not_started"
            setattr(s, state, getattr(s, state) + 1)
            if state == "passed":
                s.late += p.late(deadline)
                attempts.append(p.attempts_to_pass)
                times.append(p.passed_at - p.first_at)
        s.median_attempts = statistics.median(attempts) if attempts else None
        s.median_time_to_pass_s = statistics.median(times) if times else None
        stats.append(s)
    return stats


_COURSE_FINDINGS = (
    "FROM enrollments e JOIN users u ON u.id = e.user_id JOIN findings f ON f.learner = u.learner "
    "JOIN course_lessons cl ON cl.course_id = e.course_id AND cl.lesson = f.lesson WHERE e.course_id = ?"
)


def mistakes(db, course_id: int, limit: int = 15) -> list[dict]:
    """The findings of the course's learners on its lessons, per lesson (a mistake is made in a lesson: the same
    id in two lessons is two rows), ranked by how many learners made them (then by how many submissions), each
    with its most recent occurrence as an example."""
    # Per learner first, then per finding: no count(DISTINCT), which both databases only do by sorting.
    ranked = db.execute(
        "SELECT lesson, finding_id, count(*) AS learners, sum(n) AS submissions, max(latest) AS latest FROM ("
        "SELECT f.lesson, f.finding_id, f.learner, sum(CASE WHEN f.repeat = 0 THEN 1 ELSE 0 END) AS n, "
        f"max(f.created_at) AS latest {_COURSE_FINDINGS} GROUP BY f.learner, f.lesson, f.finding_id) AS per_learner "
        "GROUP BY lesson, finding_id ORDER BY learners DESC, submissions DESC, finding_id, lesson LIMIT ?",
        (course_id, limit),
    ).fetchall()
    out = []
    for r in ranked:
        example = db.execute(
            "SELECT f.submission_id, f.lesson, f.line, f.message, f.text, f.check_id, u.id AS user_id, u.username "
            f"{_COURSE_FINDINGS} AND f.lesson = ? AND f.finding_id = ? AND f.created_at = ? "
            "ORDER BY f.submission_id LIMIT 1",
            (course_id, r["lesson"], r["finding_id"], r["latest"]),
        ).fetchone()
        out.append({**dict(r), **dict(example), "submissions": int(r["submissions"])})
    return out


def submissions_of(db, course_id: int, learner: str, limit: int | None = None, offset: int = 0) -> list:
    """A learner's submissions of the course's lessons, newest first (with their code and verdict); one page
    of them with `limit` and `offset`."""
    page = " LIMIT ? OFFSET ?" if limit is not None else ""
    return db.execute(
        "SELECT s.id, s.lesson, s.code, s.status, s.result_status, s.score, s.error, s.created_at, "
        "s.attempt FROM submissions s JOIN course_lessons cl ON cl.lesson = s.lesson "
        "AND cl.course_id = ? WHERE s.learner = ? ORDER BY s.created_at DESC, s.id" + page,
        (course_id, learner) + ((int(limit), int(offset)) if limit is not None else ()),
    ).fetchall()


def count_submissions(db, course_id: int, learner: str) -> int:
    return db.execute(
        "SELECT count(*) FROM submissions s JOIN course_lessons cl ON cl.lesson = s.lesson "
        "AND cl.course_id = ? WHERE s.learner = ?",
        (course_id, learner),
    ).fetchone()[0]


def add_lesson(db, course_id: int, lesson: str, deadline: float | None = None) -> None:
    """The lesson at the end of the course (a deadline given replaces the one it had): what linking a lesson from
    elsewhere (an LMS's deep link) does."""
    with transaction(db):
        row = db.execute(
            "SELECT 1 FROM course_lessons WHERE course_id = ? AND lesson = ?", (course_id, lesson)
        ).fetchone()
        if row is not None:
            if deadline is not None:
                db.execute(
                    "UPDATE course_lessons SET deadline = ? WHERE course_id = ? AND lesson = ?",
                    (deadline, course_id, lesson),
                )
            return
        last = db.execute("SELECT max(position) FROM course_lessons WHERE course_id = ?", (course_id,)).scalar()
        db.execute(
            "INSERT INTO course_lessons (course_id, lesson, position, deadline) VALUES (?, ?, ?, ?)",
            (course_id, lesson, (last or 0) + 1, deadline),
        )


def teach(db, course_id: int, user_id: int) -> None:
    db.execute(
        "INSERT INTO course_instructors (course_id, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING", (course_id, user_id)
    )

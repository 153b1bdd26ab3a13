"""Each learner's record on each lesson (attempts, first try, best score, first
pass and the attempts it took), kept up to date where submissions are stored
and where results are accepted, in the same transactions. A course's dashboard
and gradebook read one row per learner and lesson instead of aggregating every
submission on every view."""

from __future__ import annotations


def submitted(db, learner: str, lesson: str, created_at: float) -> None:
    """Inside the transaction that stores the submission."""
    db.execute(
        "INSERT INTO learner_lessons (learner, lesson, attempts, first_at) VALUES (?, ?, 1, ?) "
        "ON CONFLICT (learner, lesson) DO UPDATE SET attempts = learner_lessons.attempts + 1",
        (learner, lesson, created_at),
    )


def graded(db, row, result: dict) -> None:
    """Inside the transaction that accepts the result (once per submission)."""
    learner, lesson = row["learner"], row["lesson"]
    score = result.get("score")
    if isinstance(score, (int, float)):
        db.execute(
            "UPDATE learner_lessons SET best_score = ? WHERE learner = ? AND lesson = ? "
            "AND (best_score IS NULL OR best_score < ?)",
            (score, learner, lesson, score),
        )
    if result.get("status") != "pass":
        return
    before = db.execute(
        "SELECT count(*) FROM submissions WHERE learner = ? AND lesson = ? AND created_at <= ?",
        (learner, lesson, row["created_at"]),
    ).fetchone()[0]
    passed_at = pass_time(db, learner, row["created_at"])
    db.execute(
        "UPDATE learner_lessons SET passed_at = ?, attempts_to_pass = ? WHERE learner = ? AND lesson = ? "
        "AND (passed_at IS NULL OR passed_at > ?)",
        (passed_at, before, learner, lesson, passed_at),
    )


def pass_time(db, learner: str, created_at: float) -> float:
    """When a pass counts for deadlines: when its submission was made, or, for one an account took over from
    its browser's anonymous work at sign-up (made before the account), when the account was made
    (webapp.accounts.adopt): until then it was no one's on record."""
    account = db.execute("SELECT created_at FROM users WHERE learner = ?", (learner,)).fetchone()
    return created_at if account is None else max(created_at, account["created_at"])


def recompute(db, learner: str, lesson: str) -> None:
    """The record computed again from the learner's submissions, after a regrade replaced their verdicts
    (webapp/regrades.py apply); inside the caller's transaction."""
    best = db.execute(
        "SELECT max(score) FROM submissions WHERE learner = ? AND lesson = ? AND status = 'done'", (learner, lesson)
    ).scalar()
    first = db.execute(
        "SELECT min(created_at) FROM submissions WHERE learner = ? AND lesson = ? AND result_status = 'pass'",
        (learner, lesson),
    ).scalar()
    passed_at = attempts = None
    if first is not None:
        attempts = db.execute(
            "SELECT count(*) FROM submissions WHERE learner = ? AND lesson = ? AND created_at <= ?",
            (learner, lesson, first),
        ).scalar()
        passed_at = pass_time(db, learner, first)
    db.execute(
        "UPDATE learner_lessons SET best_score = ?, passed_at = ?, attempts_to_pass = ? WHERE learner = ? "
        "AND lesson = ?",
        (best, passed_at, attempts, learner, lesson),
    )

"""Classroom: accounts, courses (lessons, deadlines, instructors, learners),
the findings of every graded submission and each learner's record on each
lesson (kept as submissions are stored and graded, so that a course's dashboard
never parses result documents or aggregates every submission), highlighted
code, sign-in attempts and open result streams (limits that hold across app
processes), and site settings. Findings and records of the submissions already
there are filled in from them.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("username", sa.Text, nullable=False),
        sa.Column("username_key", sa.Text, nullable=False, unique=True),  # case-folded: Ada and ada are one
        sa.Column("password_hash", sa.Text, nullable=False),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("learner", sa.Text, nullable=False, unique=True),  # submissions.learner of this account
        sa.Column("session_token", sa.Text, nullable=False, unique=True),  # rotated on sign-out
        sa.Column("created_at", sa.Float, nullable=False),
        sa.CheckConstraint("role IN ('learner', 'instructor')", name="users_role"),
    )
    op.create_table(
        "courses",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("join_code", sa.Text, nullable=False, unique=True),
        sa.Column("created_by", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "course_lessons",
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id"), primary_key=True),
        sa.Column("lesson", sa.Text, primary_key=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("deadline", sa.Float),
    )
    op.create_table(
        "course_instructors",
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), primary_key=True),
    )
    op.create_index("course_instructors_user", "course_instructors", ["user_id"])
    op.create_table(
        "enrollments",
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), primary_key=True),
        sa.Column("joined_at", sa.Float, nullable=False),
    )
    op.create_index("enrollments_user", "enrollments", ["user_id"])
    # Denormalised (learner, lesson, time) so that a course's mistakes are counted without reading submissions.
    op.create_table(
        "findings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submission_id", sa.Text, sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("learner", sa.Text, nullable=False),
        sa.Column("lesson", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("check_id", sa.Text, nullable=False),
        sa.Column("finding_id", sa.Text, nullable=False),
        sa.Column("line", sa.Integer),
        sa.Column("message", sa.Text),  # in English
        sa.Column("text", sa.Text),  # the message before it was worded (JSON), to word it in the reader's language
        sa.Column("repeat", sa.Integer, nullable=False, server_default="0"),  # 0: the id's first row in its submission
    )
    op.create_index("findings_submission", "findings", ["submission_id"])
    op.create_index("findings_learner", "findings", ["learner", "lesson", "finding_id", "repeat", "created_at"])
    op.create_index("findings_latest", "findings", ["finding_id", "created_at"])
    # Each learner's record on each lesson, kept up to date as submissions are stored and graded.
    op.create_table(
        "learner_lessons",
        sa.Column("learner", sa.Text, primary_key=True),
        sa.Column("lesson", sa.Text, primary_key=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("first_at", sa.Float, nullable=False),
        sa.Column("best_score", sa.Float),
        sa.Column("passed_at", sa.Float),  # created_at of the first passing submission
        sa.Column("attempts_to_pass", sa.Integer),  # submissions up to and including that one
    )
    # A submission's code as highlighted HTML, made once when it is stored.
    op.create_table(
        "code_views",
        sa.Column("submission_id", sa.Text, sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("html", sa.Text, nullable=False),
    )
    op.create_table(
        "login_attempts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("login_attempts_key", "login_attempts", ["key", "at"])
    op.create_table(
        "stream_slots",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("learner", sa.Text, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("stream_slots_learner", "stream_slots", ["learner"])
    op.create_table(
        "site_settings",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    _backfill()


def _backfill():
    """Findings and learners' records of the submissions already there, by the rules of webapp.findings.rows and
    webapp.learner_lessons, frozen here. Code views are made when first shown."""
    bind = op.get_bind()
    submissions = bind.execute(
        sa.text(
            "SELECT id, learner, lesson, created_at, result, result_status, score "
            "FROM submissions ORDER BY created_at, id"
        )
    ).fetchall()
    found, records = [], {}
    for sid, learner, lesson, created_at, text, result_status, score in submissions:
        record = records.setdefault(
            (learner, lesson),
            {
                "learner": learner,
                "lesson": lesson,
                "attempts": 0,
                "first_at": created_at,
                "best_score": None,
                "passed_at": None,
                "attempts_to_pass": None,
            },
        )
        record["attempts"] += 1
        if score is not None and (record["best_score"] is None or score > record["best_score"]):
            record["best_score"] = score
        if result_status == "pass" and record["passed_at"] is None:
            record["passed_at"], record["attempts_to_pass"] = created_at, record["attempts"]
        try:
            result = json.loads(text) if text else {}
        except ValueError:
            continue
        seen = set()
        for check in result.get("checks") or []:
            for finding in check.get("findings") or []:
                if finding.get("severity", "error") != "info" and finding.get("id"):
                    line = finding.get("line")
                    found.append(
                        {
                            "s": sid,
                            "le": learner,
                            "ls": lesson,
                            "t": created_at,
                            "c": str(check.get("id")),
                            "f": str(finding["id"]),
                            "l": line if isinstance(line, int) else None,
                            "m": finding.get("message"),
                            "r": int(str(finding["id"]) in seen),
                            "x": json.dumps(finding["text"]["message"])
                            if isinstance(finding.get("text"), dict) and finding["text"].get("message")
                            else None,
                        }
                    )
                    seen.add(str(finding["id"]))
    if found:
        bind.execute(
            sa.text(
                "INSERT INTO findings (submission_id, learner, lesson, created_at, check_id, finding_id, "
                "line, message, repeat, text) VALUES (:s, :le, :ls, :t, :c, :f, :l, :m, :r, :x)"
            ),
            found,
        )
    if records:
        bind.execute(
            sa.text(
                "INSERT INTO learner_lessons (learner, lesson, attempts, first_at, best_score, passed_at, "
                "attempts_to_pass) VALUES (:learner, :lesson, :attempts, :first_at, :best_score, "
                ":passed_at, :attempts_to_pass)"
            ),
            list(records.values()),
        )


def downgrade():
    for table in (
        "site_settings",
        "stream_slots",
        "login_attempts",
        "code_views",
        "learner_lessons",
        "findings",
        "enrollments",
        "course_instructors",
        "course_lessons",
        "courses",
        "users",
    ):
        op.drop_table(table)

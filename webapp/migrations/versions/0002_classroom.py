"""Classroom: accounts, courses (lessons, deadlines, instructors, learners),
the findings of every graded submission (indexed so that a course's dashboard
never parses result documents), sign-in attempts and open result streams
(limits that hold across app processes), and site settings. Findings of the
submissions already graded are filled in from their stored results.

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
    op.create_table(
        "findings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submission_id", sa.Text, sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("check_id", sa.Text, nullable=False),
        sa.Column("finding_id", sa.Text, nullable=False),
        sa.Column("line", sa.Integer),
        sa.Column("message", sa.Text),
    )
    op.create_index("findings_submission", "findings", ["submission_id"])
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
    _backfill_findings()


def _backfill_findings():
    """The same rule as webapp.findings.rows, frozen here: every error finding of every check."""
    bind = op.get_bind()
    graded = bind.execute(sa.text("SELECT id, result FROM submissions WHERE result IS NOT NULL")).fetchall()
    rows = []
    for sid, text in graded:
        try:
            result = json.loads(text)
        except ValueError:
            continue
        for check in result.get("checks") or []:
            for finding in check.get("findings") or []:
                if finding.get("severity", "error") != "info" and finding.get("id"):
                    line = finding.get("line")
                    rows.append({"s": sid, "c": str(check.get("id")), "f": str(finding["id"]),
                                 "l": line if isinstance(line, int) else None, "m": finding.get("message")})
    if rows:
        bind.execute(sa.text("INSERT INTO findings (submission_id, check_id, finding_id, line, message) "
                             "VALUES (:s, :c, :f, :l, :m)"), rows)


def downgrade():
    for table in ("site_settings", "stream_slots", "login_attempts", "findings", "enrollments",
                  "course_instructors", "course_lessons", "courses", "users"):
        op.drop_table(table)

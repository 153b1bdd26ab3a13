"""Regrades and exam windows. Every result now carries the content hash of the lesson file it was graded
against and the grader's version (so an instructor can tell which verdicts a lesson change left behind); a
regrade is a background job over one course lesson's graded submissions whose new verdicts are kept beside
the old ones (`regrade_items`) until applied, and stay there afterwards as the history. A course may hold an
exam window (`course_exams`: UTC seconds, optionally only some of its lessons), and every submission tried
under one, accepted or refused, is logged (`exam_attempts`).

Revision ID: 0013
Revises: 0010
Create Date: 2026-12-06"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("submissions", sa.Column("lesson_hash", sa.Text))  # sha256 of the lesson file; NULL before
    op.add_column("submissions", sa.Column("grader_version", sa.Text))
    op.create_table(
        "regrades",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lesson", sa.Text, nullable=False),
        sa.Column("requested_by", sa.Text, nullable=False),  # a username, or "cli"
        sa.Column("state", sa.Text, nullable=False),  # running, previewed, applied, cancelled
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        sa.Column("applied_at", sa.Float),
    )
    op.create_index("regrades_course", "regrades", ["course_id", "lesson"])
    op.create_table(
        "regrade_items",
        sa.Column("regrade_id", sa.Integer, sa.ForeignKey("regrades.id", ondelete="CASCADE"), nullable=False),
        sa.Column("submission_id", sa.Text, nullable=False),
        sa.Column("learner", sa.Text, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("old_status", sa.Text),
        sa.Column("old_score", sa.Float),
        sa.Column("old_result", sa.Text),  # the replaced document, kept when the regrade is applied
        sa.Column("old_lesson_hash", sa.Text),
        sa.Column("old_grader_version", sa.Text),
        sa.Column("new_status", sa.Text),
        sa.Column("new_score", sa.Float),
        sa.Column("new_result", sa.Text),
        sa.Column("lesson_hash", sa.Text),
        sa.Column("grader_version", sa.Text),
        sa.Column("error", sa.Text),  # the grader could not grade it again (a platform problem)
        sa.Column("graded_at", sa.Float),
        sa.PrimaryKeyConstraint("regrade_id", "submission_id"),
    )
    op.create_index("regrade_items_submission", "regrade_items", ["submission_id"])
    op.create_table(
        "course_exams",
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("starts_at", sa.Float, nullable=False),
        sa.Column("ends_at", sa.Float, nullable=False),
        sa.Column("lessons", sa.Text),  # a JSON list of lesson ids; NULL: every lesson of the course
        sa.Column("hold_results", sa.Integer, nullable=False, server_default="0"),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "exam_attempts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False),
        sa.Column("learner", sa.Text, nullable=False),
        sa.Column("lesson", sa.Text, nullable=False),
        sa.Column("submission_id", sa.Text),  # NULL: refused
        sa.Column("outcome", sa.Text, nullable=False),  # accepted, early, closed
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("exam_attempts_course", "exam_attempts", ["course_id", "at"])


def downgrade():
    op.drop_index("exam_attempts_course", "exam_attempts")
    op.drop_table("exam_attempts")
    op.drop_table("course_exams")
    op.drop_index("regrade_items_submission", "regrade_items")
    op.drop_table("regrade_items")
    op.drop_index("regrades_course", "regrades")
    op.drop_table("regrades")
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("grader_version")
        batch.drop_column("lesson_hash")

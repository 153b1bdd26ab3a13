"""Extensions, a course's late policy, and similarity reports. Extensions and the policy: an instructor gives one learner a new deadline for one lesson (with a
note saying why), and a course says how late work counts (webapp/late_policy.py): accepted and marked, a penalty
per started day down to a floor, or nothing after a hard cutoff. A similarity report ranks the pairs of a course
lesson's best submissions by how alike they are, for the instructor to read.

Revision ID: 0014
Revises: 0010
Create Date: 2026-12-06"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("courses", sa.Column("late_policy", sa.Text, nullable=False, server_default="accept"))
    op.add_column("courses", sa.Column("late_per_day", sa.Float, nullable=False, server_default="0"))
    op.add_column("courses", sa.Column("late_floor", sa.Float, nullable=False, server_default="0"))
    op.create_table(
        "extensions",
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("lesson", sa.Text, nullable=False),
        sa.Column("deadline", sa.Float, nullable=False),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("granted_by", sa.Integer),
        sa.Column("granted_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("course_id", "user_id", "lesson"),
    )
    # A course lesson's similarity report (webapp/similarity.py), computed by a queue task; `pairs` is its JSON.
    op.create_table(
        "similarity_reports",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id"), nullable=False),
        sa.Column("lesson", sa.Text, nullable=False),
        sa.Column("requested_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        sa.Column("submissions", sa.Integer, nullable=False),
        sa.Column("seconds", sa.Float),
        sa.Column("pairs", sa.Text),
    )
    op.create_index("similarity_reports_lesson", "similarity_reports", ["course_id", "lesson", "id"])


def downgrade():
    op.drop_index("similarity_reports_lesson", "similarity_reports")
    op.drop_table("similarity_reports")
    op.drop_table("extensions")
    for column in ("late_floor", "late_per_day", "late_policy"):
        op.drop_column("courses", column)

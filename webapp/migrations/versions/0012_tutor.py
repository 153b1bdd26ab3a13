"""The tutor (webapp/tutor, docs/tutor.md): a per-course switch, and one row per question a learner asked, so that
quotas (per day, per submission) hold across app processes and the dashboard counts questions per lesson. What
was asked and answered is kept only where the admin set TUTOR_STORE_QUESTIONS; otherwise those columns stay NULL.

Revision ID: 0012
Revises: 0010
Create Date: 2027-03-06"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("courses", sa.Column("tutor_enabled", sa.Boolean, nullable=False, server_default=sa.true()))
    op.create_table(
        "tutor_questions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("learner", sa.Text, nullable=False),
        sa.Column("lesson", sa.Text, nullable=False),
        sa.Column("submission_id", sa.Text, sa.ForeignKey("submissions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("asked_at", sa.Float, nullable=False),
        sa.Column("question", sa.Text),  # NULL unless TUTOR_STORE_QUESTIONS
        sa.Column("answer", sa.Text),  # the same
    )
    op.create_index("tutor_questions_learner", "tutor_questions", ["learner", "asked_at"])
    op.create_index("tutor_questions_submission", "tutor_questions", ["submission_id"])
    op.create_index("tutor_questions_lesson", "tutor_questions", ["lesson"])


def downgrade():
    op.drop_table("tutor_questions")
    with op.batch_alter_table("courses") as batch:
        batch.drop_column("tutor_enabled")

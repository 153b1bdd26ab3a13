"""Queue places and code storage: each submission records the size its code had when it came (`code_bytes`),
so that the code stored per learner and per address a day is bounded (webapp/store.py check_storage) even
though a cancelled run's code is dropped; a cancelled submission keeps `enqueued_at` only while its task may
still be in the grading queue (webapp/dispatch.py take_back), found through a partial index. The submissions
cancelled before this version hold no place: a worker skips their tasks.

Revision ID: 0006
Revises: 0005
Create Date: 2027-02-15"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TAKING_BACK = "error = 'cancelled' AND enqueued_at IS NOT NULL"


def upgrade():
    op.add_column("submissions", sa.Column("code_bytes", sa.Integer))
    op.create_index("submissions_learner_day", "submissions", ["learner", "created_at"])
    op.execute(f"UPDATE submissions SET enqueued_at = NULL WHERE {TAKING_BACK}")
    op.create_index(
        "submissions_taking_back",
        "submissions",
        ["id"],
        sqlite_where=sa.text(TAKING_BACK),
        postgresql_where=sa.text(TAKING_BACK),
    )


def downgrade():
    op.drop_index("submissions_taking_back", "submissions")
    op.drop_index("submissions_learner_day", "submissions")
    op.drop_column("submissions", "code_bytes")

"""Worker heartbeats: each grading worker (`amp-dojo worker`) keeps one row up to date every few seconds
(webapp/workers.py), so that every app process can tell whether a grader is running (`/readyz`, the learner's
"no grader is running" notice, the instructors' workers page, the metrics). A row whose `last_seen` is older
than WORKER_DEAD_AFTER_SECONDS is a dead worker; a clean exit deletes its row.

Revision ID: 0007
Revises: 0006
Create Date: 2027-03-01"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "worker_heartbeats",
        sa.Column("id", sa.Text, primary_key=True),  # random per worker process: a reused pid is a new worker
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("device", sa.Text, nullable=False),
        sa.Column("sandbox", sa.Text, nullable=False),
        sa.Column("concurrency", sa.Integer, nullable=False),
        sa.Column("grading", sa.Text),  # the submission ids it is grading now, space-separated; NULL: idle
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("last_seen", sa.Float, nullable=False),
    )
    op.create_index("worker_heartbeats_last_seen", "worker_heartbeats", ["last_seen"])


def downgrade():
    op.drop_index("worker_heartbeats_last_seen", "worker_heartbeats")
    op.drop_table("worker_heartbeats")

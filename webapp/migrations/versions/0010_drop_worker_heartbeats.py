"""Worker heartbeats leave the database: each worker now records its heartbeat in the grading queue's own storage
(webapp/workers.py), the one thing a worker on another machine reaches (QUEUE_URL), so `worker_heartbeats`
(0007) goes. Its rows only said which workers ran a few seconds ago: nothing is lost.

Revision ID: 0010
Revises: 0009
Create Date: 2027-03-02"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade():
    op.drop_index("worker_heartbeats_last_seen", "worker_heartbeats")
    op.drop_table("worker_heartbeats")


def downgrade():  # 0007's table, empty: the workers of that version fill it again within a beat
    op.create_table(
        "worker_heartbeats",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("device", sa.Text, nullable=False),
        sa.Column("sandbox", sa.Text, nullable=False),
        sa.Column("concurrency", sa.Integer, nullable=False),
        sa.Column("grading", sa.Text),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("last_seen", sa.Float, nullable=False),
    )
    op.create_index("worker_heartbeats_last_seen", "worker_heartbeats", ["last_seen"])

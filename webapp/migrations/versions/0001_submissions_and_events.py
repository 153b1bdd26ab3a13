"""Submissions and their progress events: the schema of the version before
migrations (webapp/schema.sql), frozen. On SQLite it is that file's SQL
verbatim, with IF NOT EXISTS, so a database that version made is adopted as it
is; PostgreSQL gets the same tables in its own types.

Revision ID: 0001
Revises:
Create Date: 2026-12-01"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SQLITE = [
    """CREATE TABLE IF NOT EXISTS submissions (
    id TEXT PRIMARY KEY,
    learner TEXT NOT NULL,
    client_ip TEXT,
    lesson TEXT NOT NULL,
    code TEXT NOT NULL,
    lang TEXT NOT NULL DEFAULT 'en',
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'error')),
    attempt INTEGER NOT NULL DEFAULT 1,
    created_at REAL NOT NULL,
    queued_at REAL NOT NULL,
    enqueued_at REAL,
    started_at REAL,
    finished_at REAL,
    hb_value TEXT,
    hb_seen_at REAL,
    result TEXT,
    result_status TEXT,
    score REAL,
    graded_by TEXT,
    error TEXT
)""",
    "CREATE INDEX IF NOT EXISTS submissions_learner ON submissions (learner, lesson, created_at)",
    "CREATE INDEX IF NOT EXISTS submissions_active ON submissions (status, queued_at)",
    "CREATE INDEX IF NOT EXISTS submissions_ip ON submissions (client_ip, created_at)",
    """CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    submission_id TEXT NOT NULL REFERENCES submissions (id),
    attempt INTEGER NOT NULL,
    source TEXT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (submission_id, attempt, source)
)""",
    "CREATE INDEX IF NOT EXISTS events_submission ON events (submission_id, id)",
]


def upgrade():
    if op.get_bind().dialect.name == "sqlite":
        for statement in SQLITE:
            op.execute(statement)
        return
    op.create_table(
        "submissions",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("learner", sa.Text, nullable=False),
        sa.Column("client_ip", sa.Text),
        sa.Column("lesson", sa.Text, nullable=False),
        sa.Column("code", sa.Text, nullable=False),
        sa.Column("lang", sa.Text, nullable=False, server_default="en"),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False, server_default="1"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("queued_at", sa.Float, nullable=False),
        sa.Column("enqueued_at", sa.Float),
        sa.Column("started_at", sa.Float),
        sa.Column("finished_at", sa.Float),
        sa.Column("hb_value", sa.Text),
        sa.Column("hb_seen_at", sa.Float),
        sa.Column("result", sa.Text),
        sa.Column("result_status", sa.Text),
        sa.Column("score", sa.Float),
        sa.Column("graded_by", sa.Text),
        sa.Column("error", sa.Text),
        sa.CheckConstraint("status IN ('queued', 'running', 'done', 'error')", name="submissions_status"),
    )
    op.create_index("submissions_learner", "submissions", ["learner", "lesson", "created_at"])
    op.create_index("submissions_active", "submissions", ["status", "queued_at"])
    op.create_index("submissions_ip", "submissions", ["client_ip", "created_at"])
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("submission_id", sa.Text, sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("submission_id", "attempt", "source", name="events_once"),
    )
    op.create_index("events_submission", "events", ["submission_id", "id"])


def downgrade():
    op.drop_table("events")
    op.drop_table("submissions")

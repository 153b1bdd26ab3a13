"""Personal access tokens: an account makes them on its account page for `grader login` (the terminal and
Jupyter submit as that account). Only a sha256 of each secret is kept (the secret is 32 random bytes, shown
once); a revoked or expired token keeps its row so the account page can say so.

Revision ID: 0009
Revises: 0008
Create Date: 2027-03-08"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "access_tokens",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("token_hash", sa.Text, nullable=False, unique=True),  # hex sha256 of the whole secret
        sa.Column("hint", sa.Text, nullable=False),  # the secret's last 4 characters, to tell tokens apart
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float),  # NULL: never
        sa.Column("last_used_at", sa.Float),
        sa.Column("revoked_at", sa.Float),
    )
    op.create_index("access_tokens_user", "access_tokens", ["user_id"])


def downgrade():
    op.drop_index("access_tokens_user", "access_tokens")
    op.drop_table("access_tokens")

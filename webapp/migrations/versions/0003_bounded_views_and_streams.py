"""Bounded pages and streams: an open result stream records its client's
address (MAX_STREAMS_PER_IP), and a highlighted code view covers only the head
of the code (`shown_chars` of it), so that an instructor's page of submissions
stays small. The code views kept so far highlighted whole submissions: they are
dropped, and made again, bounded, when first shown.

Revision ID: 0003
Revises: 0002
Create Date: 2027-01-15"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("stream_slots", sa.Column("client_ip", sa.Text))
    op.create_index("stream_slots_client_ip", "stream_slots", ["client_ip"])
    op.execute("DELETE FROM code_views")
    op.add_column("code_views", sa.Column("shown_chars", sa.Integer, nullable=False, server_default="0"))


def downgrade():
    op.drop_column("code_views", "shown_chars")
    op.drop_index("stream_slots_client_ip", "stream_slots")
    op.drop_column("stream_slots", "client_ip")

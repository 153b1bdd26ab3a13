"""LTI 1.3: the platforms (LMSs) this tool trusts, the tool's own signing keys, used launch nonces, and the links
from a platform's users and course contexts to this app's accounts and courses; the line items of a course's
lessons and the scores on their way to the platform's gradebook (kept until they land).

Revision ID: 0011
Revises: 0010
Create Date: 2027-03-12"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "lti_platforms",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("issuer", sa.Text, nullable=False),
        sa.Column("client_id", sa.Text, nullable=False),
        sa.Column("auth_login_url", sa.Text, nullable=False),
        sa.Column("auth_token_url", sa.Text, nullable=False),
        sa.Column("key_set_url", sa.Text, nullable=False),
        sa.Column("key_set", sa.Text),  # the platform's JWKS as last fetched (JSON); refetched for an unknown kid
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("issuer", "client_id", name="lti_platforms_issuer_client"),
    )
    op.create_table(
        "lti_deployments",
        sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("deployment_id", sa.Text, primary_key=True),
    )
    op.create_table(
        "lti_keys",  # the tool's RSA keys: the newest signs, the others stay published until retired
        sa.Column("kid", sa.Text, primary_key=True),
        sa.Column("private_pem", sa.Text, nullable=False),
        sa.Column("public_jwk", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("retired_at", sa.Float),
    )
    op.create_table(
        "lti_nonces",  # the nonce each login hands out, deleted by the launch that uses it: used once
        sa.Column("nonce", sa.Text, primary_key=True),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("login", sa.Text, nullable=False),  # the login's parameters (JSON): the new-window fallback's link
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("lti_nonces_expiry", "lti_nonces", ["expires_at"])
    op.create_index("lti_nonces_state", "lti_nonces", ["state"])
    op.create_table(
        "lti_accounts",
        sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("sub", sa.Text, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    )
    op.create_index("lti_accounts_user", "lti_accounts", ["user_id"])
    op.create_table(
        "lti_contexts",  # a platform's course (deployment, context) and the course it is here
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"), nullable=False),
        sa.Column("deployment_id", sa.Text, nullable=False),
        sa.Column("context_id", sa.Text, nullable=False),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False),
        sa.Column("ags", sa.Text),  # the launch's AGS endpoint claim (JSON): where line items and scores go
        sa.Column("nrps_url", sa.Text),  # the context's memberships URL (roster)
        sa.UniqueConstraint("platform_id", "deployment_id", "context_id", name="lti_contexts_key"),
    )
    op.create_index("lti_contexts_course", "lti_contexts", ["course_id"])
    op.create_table(
        "lti_line_items",
        sa.Column("context_ref", sa.Integer, sa.ForeignKey("lti_contexts.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("lesson", sa.Text, primary_key=True),
        sa.Column("url", sa.Text, nullable=False),
    )
    op.create_table(
        "lti_scores",  # the score each learner's lesson should have in the gradebook, and how sending it went
        sa.Column("context_ref", sa.Integer, sa.ForeignKey("lti_contexts.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("lesson", sa.Text, primary_key=True),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("state", sa.Text, nullable=False),  # pending, sent, failed (refused for good: the log says why)
        sa.Column("tries", sa.Integer, nullable=False, server_default="0"),
        sa.Column("last_error", sa.Text),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("sent_at", sa.Float),
        sa.CheckConstraint("state IN ('pending', 'sent', 'failed')", name="lti_scores_state"),
    )
    op.create_index("lti_scores_state", "lti_scores", ["state"])


def downgrade():
    for index, table in (
        ("lti_scores_state", "lti_scores"),
        ("lti_contexts_course", "lti_contexts"),
        ("lti_accounts_user", "lti_accounts"),
        ("lti_nonces_expiry", "lti_nonces"),
        ("lti_nonces_state", "lti_nonces"),
    ):
        op.drop_index(index, table)
    for table in (
        "lti_scores",
        "lti_line_items",
        "lti_contexts",
        "lti_accounts",
        "lti_nonces",
        "lti_keys",
        "lti_deployments",
        "lti_platforms",
    ):
        op.drop_table(table)

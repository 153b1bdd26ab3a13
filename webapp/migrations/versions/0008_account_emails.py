"""An optional e-mail address per account, where "forgot password" mails a reset link (webapp/passwords.py):
an account has none until its owner adds one on the account page. Not unique: the link goes to the address of
the account whose name was typed, and an address never signs anyone in.

Revision ID: 0008
Revises: 0007
Create Date: 2027-02-01"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade():
    op.add_column("users", sa.Column("email", sa.Text))


def downgrade():
    op.drop_column("users", "email")

"""Usernames that look alike: each account's skeleton (webapp.accounts.username_skeleton: the name case-folded,
without separators, look-alike digits and letters made one), unique, so that no learner can sign up as
"adm1n" beside "admin". Filled in for the accounts already there by the rules of username_skeleton, frozen
here; where two of them already look alike, the older keeps the skeleton and each later one gets it with
"#<id>" after it (unique, and still no new account may take the look-alike name).

Revision ID: 0004
Revises: 0003
Create Date: 2027-01-10"""

import re

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

LOOKALIKES = str.maketrans(
    {"0": "o", "1": "l", "i": "l", "2": "z", "3": "e", "4": "a", "5": "s", "6": "b", "7": "t", "8": "b", "9": "g"}
)
PAIRS = (("rn", "m"), ("vv", "w"))


def skeleton(username: str) -> str:
    text = re.sub(r"[._-]", "", username.strip().casefold()).translate(LOOKALIKES)
    for pair, letter in PAIRS:
        text = text.replace(pair, letter)
    return text


def upgrade():
    op.add_column("users", sa.Column("username_skeleton", sa.Text))
    bind = op.get_bind()
    seen = set()
    for user_id, username in bind.execute(sa.text("SELECT id, username FROM users ORDER BY id")).fetchall():
        key = skeleton(username)
        key = key if key not in seen else f"{key}#{user_id}"
        seen.add(key)
        bind.execute(sa.text("UPDATE users SET username_skeleton = :k WHERE id = :i"), {"k": key, "i": user_id})
    op.create_index("users_username_skeleton", "users", ["username_skeleton"], unique=True)


def downgrade():
    op.drop_index("users_username_skeleton", "users")
    op.drop_column("users", "username_skeleton")

"""Errors among the class's mistakes: a graded submission whose code could not be run to the end (a syntax
error, an exception, a timeout...) gets a row in `findings` for its result's error, check id "error" and
finding id "error:<kind>" (webapp.findings.error_row), so that a course's dashboard counts errors by kind
beside the checks' findings. No column changes: the rows of the submissions already graded are filled in
here, by the rules of error_row, frozen here (a cancelled grading and the grader's own failure are not the
code's mistakes).

Revision ID: 0005
Revises: 0004
Create Date: 2027-02-01"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

NOT_MISTAKES = ("cancelled", "internal")


def upgrade():
    bind = op.get_bind()
    rows = []
    for sid, learner, lesson, created_at, text in bind.execute(
        sa.text(
            "SELECT id, learner, lesson, created_at, result FROM submissions "
            "WHERE result_status = 'error' AND result IS NOT NULL ORDER BY created_at, id"
        )
    ).fetchall():
        try:
            error = (json.loads(text) or {}).get("error")
        except (ValueError, AttributeError):
            continue
        if not isinstance(error, dict) or not isinstance(error.get("kind"), str) or error["kind"] in NOT_MISTAKES:
            continue
        line, parts, message = error.get("line"), error.get("parts"), error.get("message")
        rows.append(
            {
                "s": sid,
                "le": learner,
                "ls": lesson,
                "t": created_at,
                "f": "error:" + error["kind"],
                "l": line if isinstance(line, int) else None,
                "m": message if isinstance(message, str) else None,
                "x": json.dumps(parts) if isinstance(parts, list) and parts else None,
            }
        )
    if rows:
        bind.execute(
            sa.text(
                "INSERT INTO findings (submission_id, learner, lesson, created_at, check_id, finding_id, line, "
                "message, repeat, text) VALUES (:s, :le, :ls, :t, 'error', :f, :l, :m, 0, :x)"
            ),
            rows,
        )


def downgrade():
    op.execute("DELETE FROM findings WHERE check_id = 'error'")

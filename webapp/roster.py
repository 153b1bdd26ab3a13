"""A course's roster from a CSV file: one learner per row, a `username` column and an optional `email` column
(a header row names them; without one, the first column is the username and the second the address). Each new
name becomes a learner's account with a random password nobody knows, joins the course, and gets a one-time
reset link (webapp/passwords.py) for the instructor to hand over; a learner's account that already exists just
joins. A row that cannot be an account (a bad name, an instructor's name, a bad address) is reported and
skipped: the rest of the roster is still imported."""

from __future__ import annotations

import csv
import io
import secrets

from flask import Blueprint, current_app, render_template, request

from webapp import accounts, classroom, passwords
from webapp.auth import gettext, instructor_required
from webapp.dashboard import _taught_course
from webapp.db import get_db
from webapp.i18n import noop_gettext

bp = Blueprint("roster", __name__, url_prefix="/teach")
MAX_ROWS = 500  # each new account hashes a password (scrypt, slow on purpose): a class, not a city
MAX_BYTES = 256 * 1024


def parse(text: str) -> list[tuple[str, str]]:
    """(username, email) per row; the separator is sniffed (a comma or a semicolon: what spreadsheets write)."""
    text = text.lstrip("\ufeff")
    dialect = ";" if text.split("\n", 1)[0].count(";") > text.split("\n", 1)[0].count(",") else ","
    rows = [
        [c.strip() for c in r] for r in csv.reader(io.StringIO(text), delimiter=dialect) if any(c.strip() for c in r)
    ]
    if not rows:
        return []
    head = [c.lower() for c in rows[0]]
    if "username" in head:
        user_at, email_at = head.index("username"), head.index("email") if "email" in head else None
        rows = rows[1:]
    else:
        user_at, email_at = 0, 1
    return [
        (r[user_at] if len(r) > user_at else "", r[email_at] if email_at is not None and len(r) > email_at else "")
        for r in rows
    ]


def enroll(db, config, course_id: int, username: str, email: str, host_url: str) -> dict:
    """One row: {"username", "status" (created, joined, refused), "link" (new accounts), "reason" (refused)}."""
    existing = accounts.by_username(db, username) if accounts.USERNAME.fullmatch(username or "") else None
    try:
        if existing is not None:
            if existing.role != "learner":
                raise accounts.AccountError(noop_gettext("That is an instructor's account."))
            classroom.enroll(db, course_id, existing.id)
            return {"username": existing.username, "status": "joined", "link": None, "reason": None}
        address = accounts.check_email(email)
        user = accounts.create(db, username, secrets.token_urlsafe(24))
        if address:
            accounts.set_email(db, user.id, address)
        classroom.enroll(db, course_id, user.id)
    except accounts.AccountError as exc:
        return {"username": username, "status": "refused", "link": None, "reason": gettext(exc.message, **exc.values)}
    link = passwords.reset_link(config, passwords.reset_token(db, config, user.id), host_url)
    return {"username": user.username, "status": "created", "link": link, "reason": None}


@bp.route("/courses/<int:course_id>/roster", methods=["GET", "POST"])
@instructor_required
def import_roster(course_id):
    db, course = _taught_course(course_id)
    if request.method == "GET":
        return render_template("dashboard/roster.html", course=course, results=None, error=None)
    upload = request.files.get("roster")
    raw = upload.read(MAX_BYTES + 1) if upload else (request.form.get("text") or "").encode()
    error = None
    try:
        rows = parse(raw.decode("utf-8"))
    except UnicodeDecodeError:
        rows, error = [], gettext("The file is not UTF-8 text: save it as CSV UTF-8.")
    if len(raw) > MAX_BYTES or len(rows) > MAX_ROWS:
        rows, error = [], gettext("A roster has at most {n} rows.", n=MAX_ROWS)
    elif not rows and error is None:
        error = gettext("The file has no learner: one username per row (and an e-mail address, if any).")
    if error:
        return render_template("dashboard/roster.html", course=course, results=None, error=error), 400
    db = get_db()
    results = [enroll(db, current_app.config, course_id, name, email, request.host_url) for name, email in rows]
    return render_template(
        "dashboard/roster.html",
        course=course,
        results=results,
        error=None,
        hours=passwords.hours_valid(current_app.config),
    )

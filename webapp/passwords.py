"""Passwords after sign-up: a signed-in person changes their own (and the e-mail address reset links go to),
and one who forgot theirs sets a new one with a reset link, which an instructor issues for a learner of their
course (webapp/dashboard.py), `amp-dojo reset-password` for anyone, or "forgot password" mails when the site
sends mail (webapp/mail.py).

A reset link is the account's id and a fingerprint of its password hash, signed with the app's secret key
(itsdangerous, with its own salt) and dated: nothing is stored, it cannot be forged or altered, it expires
after PASSWORD_RESET_MAX_AGE_S, and setting a password (with it, another link, or the account page) changes
the hash, so it and every link made before are spent. Setting a password also ends every session of the
account (a new session token, webapp/accounts.py)."""

from __future__ import annotations

import hashlib
import hmac
import time

from flask import Blueprint, current_app, flash, get_flashed_messages, redirect, render_template, request, url_for
from flask_login import current_user
from itsdangerous import BadData, URLSafeTimedSerializer

from webapp import accounts, mail
from webapp.auth import gettext, signin_keys, signin_limit, signin_required, start_session
from webapp.db import get_db
from webapp.security import client_ip

bp = Blueprint("passwords", __name__)
SALT = "amp-dojo password reset"


# ---------- reset links ----------


def _serializer(config) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(config["SECRET_KEY"], salt=SALT)


def fingerprint(config, password_hash: str) -> str:
    """Tells one password hash from the next without showing it (the link's payload is readable)."""
    key = f"{config['SECRET_KEY']}|{SALT}".encode()
    return hmac.new(key, password_hash.encode(), hashlib.sha256).hexdigest()[:32]


def reset_token(db, config, user_id: int) -> str:
    return _serializer(config).dumps([user_id, fingerprint(config, accounts.password_hash(db, user_id) or "")])


def read_token(db, config, token: str) -> tuple[accounts.User, str] | None:
    """(the account, its current password hash) while the link is good: signed by this site, younger than
    PASSWORD_RESET_MAX_AGE_S, and made for the password the account has now; else None."""
    try:
        user_id, made_for = _serializer(config).loads(token, max_age=int(config["PASSWORD_RESET_MAX_AGE_S"]))
    except (BadData, TypeError, ValueError):
        return None
    if not isinstance(user_id, int) or isinstance(user_id, bool) or not isinstance(made_for, str):
        return None
    current = accounts.password_hash(db, user_id)
    if current is None or not hmac.compare_digest(made_for, fingerprint(config, current)):
        return None
    return accounts.by_id(db, user_id), current


def reset_link(config, token: str, host_url: str | None) -> str:
    """The link, on PUBLIC_URL where it is set, else on `host_url` (the address an instructor's request came
    to; never a mail's, see webapp/mail.py), else a path alone (the CLI without PUBLIC_URL)."""
    path = url_for("passwords.reset", token=token)
    base = config.get("PUBLIC_URL") or host_url or ""
    return base.rstrip("/") + path


def hours_valid(config) -> int:
    return max(1, round(int(config["PASSWORD_RESET_MAX_AGE_S"]) / 3600))


# ---------- the account page: a new password, the e-mail address ----------


def _account_page(status: int = 200, error: str | None = None):
    return render_template(
        "auth/account.html", error=error, notices=get_flashed_messages(with_categories=True), mail=_mail_on()
    ), status


def _mail_on() -> bool:
    return mail.configured(current_app.config)


def _current_password_refusal():
    """None when the form's current password is the account's; else the page to answer with. Counted as a
    sign-in attempt of the account from this address (webapp/auth.py's limits): a stolen session cannot guess
    the password any faster than the sign-in page allows."""
    db, config = get_db(), current_app.config
    keys = signin_keys(current_user.username, client_ip() or "-")
    now, window = time.time(), float(config["LOGIN_WINDOW_S"])
    limits = [(keys[0], signin_limit(db, config, keys, now)), (keys[1], 0), (keys[2], 0)]
    attempt = accounts.take_attempt(db, limits, window, now)
    if attempt.wait:
        page = _account_page(429, gettext("Too many failed sign-ins: try again in {n} s.", n=attempt.wait))
        response = current_app.make_response(page)
        response.headers["Retry-After"] = str(attempt.wait)
        return response
    if accounts.authenticate(db, current_user.username, request.form.get("current_password", "")) is None:
        return _account_page(401, gettext("Your current password is not this one."))
    accounts.forget_attempts(db, keys[0])
    for key in keys[1:]:
        accounts.forget_attempt(db, attempt, key)
    return None


@bp.get("/account")
@signin_required
def account():
    return _account_page()


@bp.post("/account/password")
@signin_required
def change_password():
    """The new password is checked first (the same rules as a sign-up's), then the current one; the session
    goes on with the account's new token, and every other session of it ends."""
    new = request.form.get("password", "")
    if new != request.form.get("password2", ""):
        return _account_page(400, gettext("The two passwords differ."))
    try:
        accounts.check_password(new)
    except accounts.AccountError as exc:
        return _account_page(400, gettext(exc.message, **exc.values))
    refusal = _current_password_refusal()
    if refusal is not None:
        return refusal
    db = get_db()
    user = accounts.set_password(db, current_user.id, new, accounts.password_hash(db, current_user.id))
    if user is None:  # changed meanwhile, by a reset link or another session
        return _account_page(409, gettext("Your password was changed meanwhile: sign in again."))
    start_session(user)
    flash(gettext("Your password is changed. Everywhere else, you are signed out."), "saved")
    return redirect(url_for("passwords.account"), code=303)


@bp.post("/account/email")
@signin_required
def change_email():
    try:
        accounts.check_email(request.form.get("email", ""))
    except accounts.AccountError as exc:
        return _account_page(400, gettext(exc.message, **exc.values))
    refusal = _current_password_refusal()
    if refusal is not None:
        return refusal
    accounts.set_email(get_db(), current_user.id, request.form.get("email", ""))
    flash(gettext("Your e-mail address is saved."), "saved")
    return redirect(url_for("passwords.account"), code=303)


# ---------- using a reset link ----------


@bp.route("/reset-password/<token>", methods=["GET", "POST"])
def reset(token):
    """A good link shows the form; the password it sets spends it (only if the hash is still the one the link
    was read with: the same link sent twice at once sets one password), ends the account's sessions and signs
    this browser in."""
    db, config = get_db(), current_app.config
    found = read_token(db, config, token)
    if found is None:
        return render_template("auth/reset.html", spent=True, error=None), 410
    user, current = found
    if request.method == "GET":
        return render_template("auth/reset.html", spent=False, error=None, username=user.username)
    new = request.form.get("password", "")
    if new != request.form.get("password2", ""):
        error = gettext("The two passwords differ.")
        return render_template("auth/reset.html", spent=False, error=error, username=user.username), 400
    try:
        changed = accounts.set_password(db, user.id, new, current)
    except accounts.AccountError as exc:
        error = gettext(exc.message, **exc.values)
        return render_template("auth/reset.html", spent=False, error=error, username=user.username), 400
    if changed is None:
        return render_template("auth/reset.html", spent=True, error=None), 410
    start_session(changed)
    flash(gettext("Your password is changed. Everywhere else, you are signed out."), "saved")
    return redirect(url_for("passwords.account"), code=303)


# ---------- forgot password ----------


@bp.route("/forgot-password", methods=["GET", "POST"])
def forgot():
    """Without mail, the page says to ask the instructor. With it, every request gets the same answer as fast,
    whether or not the name is an account's or has an address (the mail leaves from another thread, so the
    SMTP server's delay never shows); requests are limited per typed name (RESET_MAILS_PER_NAME: an address is not flooded, and the
    links already sent stay good) and per client address (RESET_MAILS_PER_IP), in RESET_MAIL_WINDOW_S."""
    if request.method == "GET" or not _mail_on():
        return render_template("auth/forgot.html", mail=_mail_on(), sent=False, error=None)
    db, config = get_db(), current_app.config
    username = request.form.get("username", "")
    limits = [
        (f"forgot-name:{accounts.username_key(username)}", int(config["RESET_MAILS_PER_NAME"])),
        (f"forgot-ip:{client_ip() or '-'}", int(config["RESET_MAILS_PER_IP"])),
    ]
    attempt = accounts.take_attempt(db, limits, float(config["RESET_MAIL_WINDOW_S"]), time.time())
    if attempt.wait:
        error = gettext("Too many requests for a reset link: try again in {n} s.", n=attempt.wait)
        response = current_app.make_response(
            (render_template("auth/forgot.html", mail=True, sent=False, error=error), 429)
        )
        response.headers["Retry-After"] = str(attempt.wait)
        return response
    user = accounts.by_username(db, username)
    if user is not None and user.email:
        _mail_link(db, config, user)
    return render_template("auth/forgot.html", mail=True, sent=True, error=None, hours=hours_valid(config))


def _mail_link(db, config, user: accounts.User) -> None:
    link = reset_link(config, reset_token(db, config, user.id), None)  # mail.configured: PUBLIC_URL is set
    hours = hours_valid(config)
    body = "\n\n".join(
        [
            gettext(
                "Someone, probably you, asked for a new password for the AMP Dojo account {name}. To set one, "
                "open this link within {hours} hours (it works once):",
                name=user.username,
                hours=hours,
            ),
            link,
            gettext("If it was not you, ignore this message: your password stays as it is."),
        ]
    )
    mail.send_later(config, mail.message(config, user.email, gettext("Your AMP Dojo password"), body))

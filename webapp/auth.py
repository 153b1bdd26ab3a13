"""Sign-up, sign-in and sign-out (Flask-Login sessions in the signed cookie),
the gate that keeps anonymous visitors out when an instructor has turned
anonymous use off, and the decorator for instructor pages.

A wrong username and a wrong password get the same answer after the same work;
failed sign-ins are limited per username and address (tighter once the address
or the username has many failures), sign-ups per address, in the database (so
across app processes)."""

from __future__ import annotations

import time
from functools import wraps

from flask import Blueprint, abort, current_app, jsonify, redirect, render_template, request, session, url_for
from flask_login import LoginManager, current_user, login_user, logout_user

from webapp import accounts, i18n
from webapp.db import get_db
from webapp.security import client_ip, new_csrf_token

bp = Blueprint("auth", __name__)
login_manager = LoginManager()
# Reachable without an account when anonymous use is off: signing in, and what the sign-in page needs.
OPEN_ENDPOINTS = {
    "auth.signin",
    "auth.signup",
    "passwords.forgot",
    "passwords.reset",
    "static",
    "lessons.set_language",
    "lessons.pygments_css",
    "api.session_info",
    "api.openapi",
    "health.healthz",  # probes and the metrics scraper have no account (METRICS_ALLOW guards /metrics)
    "health.readyz",
    "metrics.metrics",
}


@login_manager.user_loader
def _load_user(token: str):
    return accounts.by_token(get_db(), token)


@login_manager.unauthorized_handler
def _unauthorized():
    if request.path.startswith("/api/"):
        response = jsonify(error="sign in first")
        response.status_code = 401
        return response
    return redirect(url_for("auth.signin", next=request.full_path.rstrip("?")))


def init_app(app):
    login_manager.init_app(app)
    app.before_request(_anonymous_gate)
    app.after_request(_no_store)


def _no_store(response):
    """Account, course and dashboard pages carry the CSRF token and learners' work: never cached."""
    if request.blueprint in ("auth", "passwords", "courses", "dashboard"):
        response.headers["Cache-Control"] = "no-store"
    return response


def _anonymous_gate():
    """before_request: with anonymous use off, only the open endpoints answer without an account."""
    if request.endpoint in OPEN_ENDPOINTS or request.endpoint is None or current_user.is_authenticated:
        return None
    if accounts.anonymous_allowed(get_db(), current_app.config):
        return None
    return _unauthorized()


def instructor_required(view):
    """Instructor pages: sign in first; a learner's account gets 403."""

    @wraps(view)
    def wrapped(*args, **kwargs):
        if not current_user.is_authenticated:
            return _unauthorized()
        if not current_user.is_instructor:
            abort(403)
        return view(*args, **kwargs)

    return wrapped


def signin_required(view):
    @wraps(view)
    def wrapped(*args, **kwargs):
        if not current_user.is_authenticated:
            return _unauthorized()
        return view(*args, **kwargs)

    return wrapped


def _next() -> str:
    from webapp.lessons import _safe_next

    return _safe_next(request.values.get("next"))


def start_session(user: accounts.User) -> None:
    """A fresh session (a new CSRF token, no anonymous learner id left behind), then the account's."""
    session.clear()
    login_user(user)
    session.permanent = True
    new_csrf_token()


@bp.route("/signup", methods=["GET", "POST"])
def signup():
    """Every attempt counts toward the address's limit before anything else is done with it: a taken name, two
    passwords that differ and a new account alike, so the password hash (the costly part) runs at most
    SIGNUPS_PER_IP times an hour per address, and a taken name never runs it."""
    if request.method == "GET":
        return render_template("auth/signup.html", next=_next(), error=None, username="")
    db = get_db()
    username, password = request.form.get("username", ""), request.form.get("password", "")
    ip = client_ip() or "-"
    attempt = accounts.take_attempt(db, [(f"signup:{ip}", current_app.config["SIGNUPS_PER_IP"])], 3600, time.time())
    if attempt.wait:
        message = gettext("Too many new accounts from this address: try again in {n} s.", n=attempt.wait)
        return _form_error("auth/signup.html", 429, message, attempt.wait, username=username)
    if password != request.form.get("password2", ""):
        return _form_error("auth/signup.html", 400, gettext("The two passwords differ."), username=username)
    anonymous = None if current_user.is_authenticated else session.get("learner")
    try:
        user = accounts.create(db, username, password, "learner", reown_from=anonymous)
    except accounts.AccountError as exc:
        return _form_error("auth/signup.html", 400, gettext(exc.message, **exc.values), username=username)
    start_session(user)
    return redirect(_next(), code=303)


@bp.route("/signin", methods=["GET", "POST"])
def signin():
    """The attempt is counted in the same write transaction that checks its limit, before the password is: N
    guesses sent at once count as N. The limit is per username and address (signin_limit), so guesses at
    made-up or other names never refuse a right password for an account from the same address. A right
    password uncounts its own attempt and forgets the account's failures from this address."""
    if request.method == "GET":
        return render_template("auth/signin.html", next=_next(), error=None, username="")
    db, config = get_db(), current_app.config
    username, password = request.form.get("username", ""), request.form.get("password", "")
    keys = signin_keys(username, client_ip() or "-")
    now, window = time.time(), float(config["LOGIN_WINDOW_S"])
    limits = [(keys[0], signin_limit(db, config, keys, now)), (keys[1], 0), (keys[2], 0)]
    attempt = accounts.take_attempt(db, limits, window, now)
    if attempt.wait:
        return _form_error(
            "auth/signin.html",
            429,
            gettext("Too many failed sign-ins: try again in {n} s.", n=attempt.wait),
            attempt.wait,
            username=username,
        )
    user = accounts.authenticate(db, username, password)
    if user is None:
        return _form_error("auth/signin.html", 401, gettext("Wrong username or password."), username=username)
    accounts.forget_attempts(db, keys[0])
    for key in keys[1:]:
        accounts.forget_attempt(db, attempt, key)
    start_session(user)
    return redirect(_next(), code=303)


def signin_keys(username: str, ip: str) -> tuple[str, str, str]:
    """What failed sign-ins are counted under: (username, address), the address, the username."""
    name = accounts.username_key(username)
    return f"signin:{name}|{ip}", f"signin-ip:{ip}", f"signin-name:{name}"


def signin_limit(db, config, keys: tuple[str, str, str], now: float) -> int:
    """Failures one address may make on one username in the window: LOGIN_FAILURES_PER_ACCOUNT; only 1 (its
    first try) once the address has failed LOGIN_FAILURES_PER_IP times on any names (spraying) or the username
    has had LOGIN_FAILURES_PER_NAME failures from any addresses (a guesser with many addresses). A pair with no
    failure always gets its try: a right password from an address that has not guessed at that name passes,
    and guessing stays bounded per account (per address, and past the name's limit one guess per address)."""
    window = float(config["LOGIN_WINDOW_S"])
    per_pair = int(config["LOGIN_FAILURES_PER_ACCOUNT"])
    for key, limit in ((keys[1], config["LOGIN_FAILURES_PER_IP"]), (keys[2], config["LOGIN_FAILURES_PER_NAME"])):
        if limit and accounts.count_attempts(db, key, window, now, int(limit)) >= int(limit):
            return 1
    return per_pair


def gettext(text: str, **values) -> str:
    """The message in the page's language."""
    from webapp.lessons import current_lang

    return i18n.gettext(text, current_lang(), **values)


def _form_error(template: str, status: int, message: str, wait: int | None = None, **values):
    response = current_app.make_response((render_template(template, next=_next(), error=message, **values), status))
    if wait:
        response.headers["Retry-After"] = str(wait)
    return response


@bp.post("/signout")
def signout():
    """Ends every session of the account (the token they carry is replaced), then starts an anonymous one."""
    if current_user.is_authenticated:
        accounts.end_sessions(get_db(), current_user.id)
    logout_user()
    session.clear()
    return redirect(url_for("lessons.index"), code=303)


# ---------- the account page: personal access tokens for the terminal and Jupyter (webapp/tokens.py) ----------


@bp.get("/account/tokens")
@signin_required
def tokens_page():
    return _account_page()


def _account_page(status: int = 200, secret: str | None = None, error: str | None = None):
    """The account's tokens; `secret` is a token just made, shown on this one answer and never again."""
    import time as clock

    from webapp import tokens

    listed = tokens.listed(get_db(), current_user.id)
    states = {t.id: t.state(clock.time()) for t in listed}
    page = render_template(
        "auth/tokens.html", tokens=listed, states=states, secret=secret, error=error, server=request.host_url
    )
    return current_app.make_response((page, status))


@bp.post("/account/tokens")
@signin_required
def make_token():
    from webapp import tokens

    days_text = request.form.get("days", "").strip()
    days = int(days_text) if days_text.isascii() and days_text.isdigit() and len(days_text) < 6 else None
    if days_text and days is None:
        return _account_page(
            400, error=gettext("A token expires after 1 to {max} days, or never.", max=tokens.MAX_DAYS)
        )
    try:
        secret = tokens.make(get_db(), current_user.id, request.form.get("name", ""), days)
    except accounts.AccountError as exc:
        return _account_page(400, error=gettext(exc.message, **exc.values))
    return _account_page(201, secret=secret)


@bp.post("/account/tokens/<int:token_id>/revoke")
@signin_required
def revoke_token(token_id):
    from webapp import tokens

    if not tokens.revoke(get_db(), current_user.id, token_id):
        abort(404)
    return redirect(url_for("auth.tokens_page"), code=303)


@bp.app_context_processor
def _labels():
    return {
        "verdict_labels": {
            "pass": gettext("Passed"),
            "fail": gettext("Failed"),
            "error": gettext("Error"),
            "queued": gettext("Queued"),
            "running": gettext("Running"),
        }
    }

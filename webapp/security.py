"""Identity, CSRF and response headers.

A learner is the signed-in account's learner id (webapp/auth.py), else an
anonymous one: a random id in the signed session cookie, created on the first
visit. Every state-changing request must echo the session's CSRF
token in the X-CSRF-Token header (JavaScript reads it from a <meta> tag) or,
from the site's own plain forms, in a csrf_token field; a cross-site form
cannot set headers, and the token is unguessable. The tokens are Flask-WTF's
CSRFProtect (signed with the app's key, checked against the session's); any
other value, however malformed, is a 403."""

from __future__ import annotations

import os
import secrets

from flask import g, has_request_context, jsonify, request, session
from flask.sessions import SecureCookieSessionInterface
from flask_login import current_user
from flask_wtf.csrf import CSRFError, CSRFProtect, generate_csrf

CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"  # the forms' hidden field, and where the session keeps its raw token
FRAMED = "lti_frame"  # in the session: opened by an LMS launch, so read inside the LMS's iframe (webapp/lti)


class _CSRFProtect(CSRFProtect):
    """CSRF stops another site riding on the browser's cookie. A request with an access token (bearer_signin)
    carries its credential itself and ignores the cookie, so there is nothing to ride on: no CSRF token."""

    def protect(self, *args, **kwargs):
        if g.get("bearer"):
            return None
        return super().protect(*args, **kwargs)


csrf = _CSRFProtect()

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        # CodeMirror and the charts set element styles from script; no inline <style> of ours.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def secret_key(instance_path: str) -> str:
    """Generated once per installation, kept in the instance folder (mode 0600),
    so sessions survive restarts and the key is never in the repository."""
    from webapp.files import private_dir

    path = private_dir(instance_path) / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    return path.read_text().strip()


def learner_id() -> str:
    """The learner of this request: the signed-in account's, else the anonymous one, created on first use."""
    if current_user.is_authenticated:
        return current_user.learner
    if "learner" not in session:
        session["learner"] = secrets.token_urlsafe(16)
        session.permanent = True
    return session["learner"]


def readable_submission(db, sid: str):
    """The submission, if this request's learner sent it or teaches it (webapp.classroom.can_read), else None:
    to anyone else a submission does not exist."""
    from webapp import classroom, store

    row = store.get(db, sid)
    if row is None or not classroom.can_read(db, row, current_user, learner_id()):
        return None
    return row


def csrf_token() -> str:
    """This session's CSRF token as pages and /api/session hand it out (signed; the session keeps the raw one)."""
    return generate_csrf()


def new_csrf_token() -> str:
    """After session.clear() (signing in): a token of the new session, not the one this request cached."""
    g.pop(CSRF_FIELD, None)
    return generate_csrf()


def _csrf_refused(_exc: CSRFError):
    """A missing, wrong, expired or malformed token (any value: Flask-WTF reads it as signed data) is a 403."""
    response = jsonify(error="missing or wrong CSRF token: reload the page and try again")
    response.status_code = 403
    return response


def _csrf_settings(app) -> None:
    """Flask-WTF, held to this app's contract: the token in X-CSRF-Token or the forms' csrf_token field, valid
    as long as the session (not an hour: a lesson page stays open longer), and no Referer check over HTTPS
    (privacy settings drop the header, so learners would be refused; urlparse raises on some malformed
    Referer values; the token and the SameSite cookie already refuse other sites)."""
    app.config.setdefault("WTF_CSRF_HEADERS", [CSRF_HEADER])
    app.config.setdefault("WTF_CSRF_FIELD_NAME", CSRF_FIELD)
    app.config.setdefault("WTF_CSRF_TIME_LIMIT", None)
    app.config.setdefault("WTF_CSRF_SSL_STRICT", False)


# Routes whose bearer token is not an account's: /metrics checks METRICS_TOKEN itself, and a probe's header is the
# prober's business (both answer without an account).
NOT_AN_ACCOUNTS_TOKEN = {"metrics.metrics", "health.healthz", "health.readyz"}


def bearer_signin():
    """before_request: `Authorization: Bearer <token>` signs the request in as the token's account (webapp/tokens.py)
    and nothing else does: the session cookie is not read or written. An unknown, revoked or expired token is a
    401, an endpoint outside the token's scope a 403, both in JSON in the learner's language (?lang=, else
    Accept-Language)."""
    from webapp import content, i18n, tokens

    kind, _, secret = request.headers.get("Authorization", "").partition(" ")
    if kind.lower() != "bearer" or request.endpoint in NOT_AN_ACCOUNTS_TOKEN:
        return None
    g.bearer = True
    lang = content.language(request.args.get("lang") or request.accept_languages.best_match(content.LANGUAGES))
    from webapp.db import get_db

    user, why = tokens.user_for(get_db(), secret.strip())
    if user is None:
        response = jsonify(error=i18n.gettext(why, lang))
        response.status_code = 401
        response.headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
        return response
    g._login_user = user  # Flask-Login's current_user for this request only; the session stays untouched
    if request.endpoint is not None and request.endpoint not in tokens.SCOPE:
        response = jsonify(error=i18n.gettext(tokens.OUT_OF_SCOPE, lang))
        response.status_code = 403
        return response
    return None


def refuse_nul():
    """before_request: a NUL character in the path, the query or a form is a 400. No page or API takes one,
    and PostgreSQL cannot store one in text (SQLite can): both databases answer the same."""
    values = [request.path, *(v for vs in request.args.listvalues() for v in vs)]
    if request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data"):
        values += [v for vs in request.form.listvalues() for v in vs]
    if any("\x00" in v for v in values):
        response = jsonify(error="a NUL character is not allowed here")
        response.status_code = 400
        return response
    return None


def set_headers(response):
    """after_request: the page may only run our own scripts and never be framed."""
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    if "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]:  # else an LMS frames it (webapp/lti)
        response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    return response


def client_ip() -> str | None:
    return request.remote_addr


class SessionInterface(SecureCookieSessionInterface):
    """The session cookie is Secure whenever the request came over HTTPS (behind a proxy: TRUSTED_PROXIES),
    not only where SESSION_COOKIE_SECURE says so."""

    def get_cookie_secure(self, app) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"]) or (has_request_context() and request.is_secure)

    def get_cookie_samesite(self, app) -> str | None:
        """SameSite=None for a session opened by an LMS launch over HTTPS (webapp/lti): inside the LMS's iframe
        the cookie is a third party's, which Lax never sends."""
        return "None" if _framed_session() else app.config["SESSION_COOKIE_SAMESITE"]

    def get_cookie_partitioned(self, app) -> bool:
        """Partitioned (CHIPS) with it: the browser keeps it for this LMS's pages alone."""
        return _framed_session() or bool(app.config.get("SESSION_COOKIE_PARTITIONED"))


def _framed_session() -> bool:
    return has_request_context() and request.is_secure and bool(session.get(FRAMED))


def init_app(app):
    app.session_interface = SessionInterface()
    proxies = int(app.config.get("TRUSTED_PROXIES") or 0)
    if proxies:  # X-Forwarded-For/-Proto/-Host from that many proxies: client_ip() and request.is_secure
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    app.before_request(refuse_nul)
    app.before_request(bearer_signin)  # before CSRF (a bearer request needs none) and the anonymous gate
    _csrf_settings(app)
    csrf.init_app(app)  # its before_request runs after refuse_nul's
    app.register_error_handler(CSRFError, _csrf_refused)
    app.after_request(set_headers)

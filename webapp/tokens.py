"""Personal access tokens: how `grader submit` and `%%grade --submit` act as an account (docs/api.md).

A token is `ampd_` and 43 URL-safe characters (32 random bytes): recognisable to a secret scanner, and
unguessable, so a plain sha256 of it is enough to store (a password needs a slow hash because a person picks it;
a token is drawn at random). The secret is shown once, when it is made; the database keeps its hash, its name,
its last four characters, when it expires and when it was last used. A token may only submit and read its
account's own submissions (SCOPE); sign-in sessions never come from one."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from webapp import accounts
from webapp.i18n import noop_gettext

PREFIX = "ampd_"
MAX_NAME = 60
MAX_PER_ACCOUNT = 20
MAX_DAYS = 3650
LAST_USED_EVERY_S = 60.0
# The API endpoints a token opens: submitting, following its own submissions, and saying whose it is.
SCOPE = frozenset(
    {"api.submit", "api.submission", "api.stream", "api.lesson_submissions", "api.me", "tutor.ask"}  # grader ask
)
UNKNOWN = noop_gettext("This access token is unknown or revoked: make a new one on your account page.")
EXPIRED = noop_gettext("This access token has expired: make a new one on your account page.")
OUT_OF_SCOPE = noop_gettext("An access token may only submit code and read your own submissions.")


@dataclass
class Token:
    id: int
    name: str
    hint: str
    created_at: float
    expires_at: float | None
    last_used_at: float | None
    revoked_at: float | None

    def state(self, now: float) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def make(db, user_id: int, name: str, days: int | None, now: float | None = None) -> str:
    """A new token for the account; returns its secret, which nothing keeps (only its hash is stored)."""
    name = (name or "").strip()
    if not 1 <= len(name) <= MAX_NAME:
        raise accounts.AccountError(noop_gettext("A token needs a name of 1 to {max} characters."), max=MAX_NAME)
    if days is not None and not 1 <= days <= MAX_DAYS:
        raise accounts.AccountError(noop_gettext("A token expires after 1 to {max} days, or never."), max=MAX_DAYS)
    now = time.time() if now is None else now
    active = [t for t in listed(db, user_id) if t.state(now) == "active"]
    if len(active) >= MAX_PER_ACCOUNT:
        raise accounts.AccountError(
            noop_gettext("An account has at most {max} active tokens: revoke one first."), max=MAX_PER_ACCOUNT
        )
    secret = PREFIX + secrets.token_urlsafe(32)
    db.execute(
        "INSERT INTO access_tokens (user_id, name, token_hash, hint, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        (user_id, name, digest(secret), secret[-4:], now, None if days is None else now + days * 86400.0),
    )
    return secret


def listed(db, user_id: int) -> list[Token]:
    rows = db.execute(
        "SELECT id, name, hint, created_at, expires_at, last_used_at, revoked_at FROM access_tokens "
        "WHERE user_id = ? ORDER BY created_at DESC, id DESC",
        (user_id,),
    ).fetchall()
    return [Token(**dict(row)) for row in rows]


def revoke(db, user_id: int, token_id: int, now: float | None = None) -> bool:
    """Revokes one of the account's own tokens (another account's is not found). True if it was active."""
    now = time.time() if now is None else now
    result = db.execute(
        "UPDATE access_tokens SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL",
        (now, token_id, user_id),
    )
    return bool(result.rowcount)


def user_for(db, secret: str, now: float | None = None) -> tuple[accounts.User | None, str | None]:
    """(the token's account, None), or (None, why not: UNKNOWN or EXPIRED). Records the use."""
    now = time.time() if now is None else now
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return None, UNKNOWN
    row = db.execute(
        "SELECT id, user_id, expires_at, revoked_at FROM access_tokens WHERE token_hash = ?", (digest(secret),)
    ).fetchone()
    if row is None or row["revoked_at"] is not None:
        return None, UNKNOWN
    if row["expires_at"] is not None and row["expires_at"] <= now:
        return None, EXPIRED
    user = accounts.by_id(db, row["user_id"])
    if user is None:
        return None, UNKNOWN
    db.execute(  # at most one write a minute per token: `grader submit` polls every second
        "UPDATE access_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
        (now, row["id"], now - LAST_USED_EVERY_S),
    )
    return user, None

"""Accounts in the web app's database: learners and instructors, their
passwords (werkzeug's scrypt hashes), the sign-in attempts that rate limits
count, and the site settings instructors change (anonymous use).

Each account has its own learner id (the `learner` of its submissions), so
everything that works for an anonymous learner works for an account unchanged.
An account's session carries its `session_token`, never its id: signing out
replaces the token, which ends every session of that account, including
copies of an old cookie."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from functools import lru_cache

from flask_login import UserMixin
from werkzeug.security import check_password_hash, generate_password_hash

from webapp.db import transaction
from webapp.i18n import noop_gettext

ROLES = ("learner", "instructor")
USERNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{2,31}")
MIN_PASSWORD, MAX_PASSWORD = 8, 256


class AccountError(Exception):
    """A sign-up or CLI request that cannot be done; `message` (English, with `values` for its
    placeholders) is for the person, translated where it is shown."""

    def __init__(self, message: str, **values):
        super().__init__(message.format(**values))
        self.message, self.values = message, values


@dataclass
class User(UserMixin):
    id: int
    username: str
    role: str
    learner: str
    session_token: str
    email: str | None = None

    def get_id(self) -> str:
        return self.session_token

    @property
    def is_instructor(self) -> bool:
        return self.role == "instructor"


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """Checked against when the username does not exist, so a wrong name takes as long as a wrong password."""
    return generate_password_hash(secrets.token_urlsafe(16))


def _user(row) -> User | None:
    if row is None:
        return None
    return User(row["id"], row["username"], row["role"], row["learner"], row["session_token"], row["email"])


def username_key(username: str) -> str:
    """What sign-in looks an account up by: the name as typed, case-folded (Ada and ada are one account)."""
    return username.strip().casefold()


# Characters a reader takes for one another in a username (only ASCII letters, digits and . - _ are allowed),
# each mapped to one of them; then pairs of letters that read as one.
_LOOKALIKES = str.maketrans(
    {"0": "o", "1": "l", "i": "l", "2": "z", "3": "e", "4": "a", "5": "s", "6": "b", "7": "t", "8": "b", "9": "g"}
)
_LOOKALIKE_PAIRS = (("rn", "m"), ("vv", "w"))


def username_skeleton(username: str) -> str:
    """The name as a reader might take it: case-folded, without separators (., -, _: so ada.l, ada_l, adal and
    adal. are one), digits and letters that look alike made one (0/o, 1/l/i, 5/s, ...). Two accounts never share
    one (a unique index), so a learner cannot sign up as a look-alike of a classmate or of the instructor."""
    skeleton = re.sub(r"[._-]", "", username_key(username)).translate(_LOOKALIKES)
    for pair, letter in _LOOKALIKE_PAIRS:
        skeleton = skeleton.replace(pair, letter)
    return skeleton


def check_new(username: str, password: str) -> None:
    """Raises AccountError for a username or password an account may not have."""
    if not USERNAME.fullmatch(username or ""):
        raise AccountError(noop_gettext("A username has 3 to 32 letters, digits, dots, dashes or underscores."))
    check_password(password)


def check_password(password: str) -> None:
    """Raises AccountError for a password no account may have (sign-up, a change and a reset alike)."""
    if not MIN_PASSWORD <= len(password or "") <= MAX_PASSWORD:
        raise AccountError(
            noop_gettext("A password has {min} to {max} characters."), min=MIN_PASSWORD, max=MAX_PASSWORD
        )


def check_free(db, username: str) -> None:
    """Raises AccountError when an account has this name, or one that looks like it (username_skeleton)."""
    row = db.execute(
        "SELECT username_key FROM users WHERE username_key = ? OR username_skeleton = ?",
        (username_key(username), username_skeleton(username)),
    ).fetchone()
    if row is None:
        return
    if row["username_key"] == username_key(username):
        raise AccountError(noop_gettext("That username is taken: choose another."))
    raise AccountError(noop_gettext("That username looks too much like one that is taken: choose another."))


# The password hash of an account that another site signs in (an LMS, webapp/lti): no password matches it
# (werkzeug's check_password_hash reads method$salt$hash and answers False to anything else).
NO_PASSWORD = "!signed-in-elsewhere"


def create(db, username: str, password: str | None, role: str = "learner", reown_from: str | None = None) -> User:
    """A new account; with `reown_from`, that anonymous learner's submissions become the account's; with no
    password (None), one that signs in only elsewhere until a password is set for it (a reset link).
    A taken name is refused before the password is hashed (scrypt is the costly part of a sign-up)."""
    check_new(username, "x" * MIN_PASSWORD if password is None else password)
    assert role in ROLES
    check_free(db, username)
    # slow on purpose: outside the write lock
    password_hash = NO_PASSWORD if password is None else generate_password_hash(password)
    learner, token, now = secrets.token_urlsafe(16), secrets.token_urlsafe(32), time.time()
    with transaction(db):
        check_free(db, username)  # again: another sign-up may have taken it while this one hashed
        db.execute(
            "INSERT INTO users (username, username_key, username_skeleton, password_hash, role, learner, "
            "session_token, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                username.strip(),
                username_key(username),
                username_skeleton(username),
                password_hash,
                role,
                learner,
                token,
                now,
            ),
        )
        if reown_from:  # the account is new: it has no record of its own to merge these into
            adopt(db, reown_from, learner, now)
    return by_username(db, username)


def adopt(db, anonymous: str, learner: str, now: float) -> None:
    """The anonymous learner's submissions and records become the new account's. Whoever made them, they were
    no one's on record until now: a pass counts from now against a course's deadlines (learner_lessons keeps
    the later of the two times, and so does one graded later, see learner_lessons.graded), while each
    submission keeps its real time. Otherwise someone who passed on time could hand their browser, and the
    pass, to a classmate signing up after the deadline."""
    for table in ("submissions", "findings", "learner_lessons"):
        db.execute(f"UPDATE {table} SET learner = ? WHERE learner = ?", (learner, anonymous))
    db.execute("UPDATE learner_lessons SET passed_at = ? WHERE learner = ? AND passed_at < ?", (now, learner, now))


def by_username(db, username: str) -> User | None:
    return _user(db.execute("SELECT * FROM users WHERE username_key = ?", (username_key(username),)).fetchone())


def by_token(db, token: str) -> User | None:
    return _user(db.execute("SELECT * FROM users WHERE session_token = ?", (token,)).fetchone())


def by_id(db, user_id: int) -> User | None:
    return _user(db.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone())


def authenticate(db, username: str, password: str) -> User | None:
    """The account, if the password is its own; the same work whether or not the name exists."""
    row = db.execute("SELECT * FROM users WHERE username_key = ?", (username_key(username or ""),)).fetchone()
    password = (password or "")[:MAX_PASSWORD]
    if row is None or row["password_hash"] == NO_PASSWORD:  # an LMS's account takes as long as a wrong name
        check_password_hash(_dummy_hash(), password)
        return None
    return _user(row) if check_password_hash(row["password_hash"], password) else None


def end_sessions(db, user_id: int) -> None:
    db.execute("UPDATE users SET session_token = ? WHERE id = ?", (secrets.token_urlsafe(32), user_id))


# ---------- changing a password, the e-mail address a reset link is mailed to ----------

EMAIL = re.compile(r"[^@\s]{1,64}@[^@\s.]+(\.[^@\s.]+)+")
MAX_EMAIL = 254


def password_hash(db, user_id: int) -> str | None:
    return db.execute("SELECT password_hash FROM users WHERE id = ?", (user_id,)).scalar()


def set_password(db, user_id: int, password: str, replacing: str) -> User | None:
    """The account with its new password and a new session token (every session of it ends, and every reset
    link made before, which carries a fingerprint of the old hash: webapp/passwords.py), or None when its hash
    is no longer `replacing`: one reset link used twice at once sets one password, not two."""
    check_password(password)
    new_hash = generate_password_hash(password)  # outside the write lock, like a sign-up's
    with transaction(db):
        changed = db.execute(
            "UPDATE users SET password_hash = ?, session_token = ? WHERE id = ? AND password_hash = ?",
            (new_hash, secrets.token_urlsafe(32), user_id, replacing),
        ).rowcount
    return by_id(db, user_id) if changed == 1 else None


def check_email(email: str) -> str | None:
    """The address as stored ("" is none), or AccountError for one that is not an address."""
    email = (email or "").strip()
    if not email:
        return None
    if len(email) > MAX_EMAIL or not EMAIL.fullmatch(email):
        raise AccountError(noop_gettext("That is not an e-mail address (name@example.org)."))
    return email


def set_email(db, user_id: int, email: str) -> None:
    db.execute("UPDATE users SET email = ? WHERE id = ?", (check_email(email), user_id))


# ---------- rate limits on sign-in and sign-up, shared by every app process ----------


@dataclass
class Attempt:
    """One counted sign-in or sign-up attempt: refused (`wait` seconds, nothing recorded) or recorded."""

    wait: int | None
    at: float


def retry_after(db, limits: list[tuple[str, int]], window_s: float, now: float) -> int | None:
    """Seconds to wait when any (key, limit) already has `limit` attempts within the window, else None."""
    for key, limit in limits:
        if not limit:
            continue
        rows = db.execute(
            "SELECT at FROM login_attempts WHERE key = ? AND at > ? ORDER BY at DESC LIMIT ?",
            (key, now - window_s, int(limit)),
        ).fetchall()
        if len(rows) >= int(limit):
            return max(1, int(rows[-1]["at"] + window_s - now) + 1)
    return None


def count_attempts(db, key: str, window_s: float, now: float, at_most: int) -> int:
    """Attempts recorded under `key` within the window, counted up to `at_most` (what a limit needs to know)."""
    rows = db.execute(
        "SELECT 1 FROM login_attempts WHERE key = ? AND at > ? LIMIT ?", (key, now - window_s, int(at_most))
    ).fetchall()
    return len(rows)


def take_attempt(db, limits: list[tuple[str, int]], window_s: float, now: float) -> Attempt:
    """Counts an attempt against every (key, limit), in one write transaction with the check: refused when any
    key is at its limit (a limit of 0 only records), else recorded under every key before the caller does the
    costly part (a password hash). A check and a later record would let N concurrent attempts all pass a limit
    of 5."""
    with transaction(db):
        wait = retry_after(db, limits, window_s, now)
        if wait:
            return Attempt(wait, now)
        db.execute("DELETE FROM login_attempts WHERE at < ?", (now - max(86400.0, window_s),))
        for key, _limit in limits:
            db.execute("INSERT INTO login_attempts (key, at) VALUES (?, ?)", (key, now))
    return Attempt(None, now)


def forget_attempts(db, key: str) -> None:
    db.execute("DELETE FROM login_attempts WHERE key = ?", (key,))


def forget_attempt(db, attempt: Attempt, key: str) -> None:
    """Uncounts one recorded attempt under `key` (a sign-in that turned out right is no failure)."""
    db.execute(
        "DELETE FROM login_attempts WHERE id IN (SELECT id FROM login_attempts WHERE key = ? AND at = ? "
        "ORDER BY id LIMIT 1)",
        (key, attempt.at),
    )


# ---------- site settings ----------


def setting(db, key: str, default: str) -> str:
    row = db.execute("SELECT value FROM site_settings WHERE key = ?", (key,)).fetchone()
    return default if row is None else row["value"]


def set_setting(db, key: str, value: str) -> None:
    with transaction(db):
        db.execute("DELETE FROM site_settings WHERE key = ?", (key,))
        db.execute("INSERT INTO site_settings (key, value) VALUES (?, ?)", (key, value))


def anonymous_allowed(db, config) -> bool:
    return setting(db, "anonymous_use", "on" if config["ANONYMOUS_USE"] else "off") == "on"

"""Who a launch is and where it lands: the platform's user (issuer, sub) is an account here, made on the first
launch (its name and email from the claims where the platform sends them); the platform's course (issuer,
deployment, context) is a course here, made on an instructor's first launch; the roles say whether the account
teaches it or learns in it."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass

from webapp import accounts, classroom, content

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
TEACHING_ROLES = ("Instructor", "Administrator", "ContentDeveloper", "TeachingAssistant", "Mentor")


class LaunchRefused(Exception):
    """A launch that is valid but cannot land (no course yet for a learner, no context); `message` for the person."""


@dataclass
class Landing:
    user: accounts.User
    course_id: int | None
    context_ref: int | None
    lesson: str | None


def teaches(roles: list[str]) -> bool:
    """Whether the LIS roles (full URIs or short names) include one that teaches: context roles only (an
    institution's Instructor role alone does not make a course's instructor)."""
    for role in roles or []:
        if "/institution/" in role:
            continue
        name = role.rsplit("#", 1)[-1].rsplit("/", 1)[-1]
        if name in TEACHING_ROLES:
            return True
    return False


def _username(db, claims: dict, iss: str, sub: str) -> str:
    """A readable name from the claims when one is free, else lti-<digest of the platform's ids>."""
    digest = hashlib.sha256(f"{iss}\n{sub}".encode()).hexdigest()[:10]
    given = claims.get("preferred_username") or claims.get("given_name") or claims.get("name") or ""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", given.strip()).strip("-._")[:24]
    for name in ([f"{slug}-{digest[:4]}"] if len(slug) >= 2 else []) + [f"lti-{digest}"]:
        try:
            accounts.check_free(db, name)
            return name
        except accounts.AccountError:
            continue
    return f"lti-{secrets.token_hex(6)}"


def account(db, platform_id: int, claims: dict, teacher: bool) -> accounts.User:
    """The account of (platform, sub), made on its first launch: no password anyone knows (the LMS signs it in)."""
    sub = claims["sub"]
    row = db.execute(
        "SELECT u.* FROM lti_accounts a JOIN users u ON u.id = a.user_id WHERE a.platform_id = ? AND a.sub = ?",
        (platform_id, sub),
    ).fetchone()
    if row is not None:
        return accounts._user(row)
    user = accounts.create(
        db, _username(db, claims, claims["iss"], sub), None, role="instructor" if teacher else "learner"
    )
    db.execute(
        "INSERT INTO lti_accounts (platform_id, sub, user_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (platform_id, sub, user.id),
    )
    if claims.get("email"):
        try:
            accounts.set_email(db, user.id, claims["email"])
        except accounts.AccountError:
            pass  # an address this app cannot use: the account works without one
    return accounts.by_username(db, user.username)


def context(db, platform_id: int, claims: dict, user: accounts.User, teacher: bool, lesson: str | None):
    """(context row id, course id) of the launch's context: linked, or made now when an instructor launches."""
    ctx = claims.get(CLAIM + "context") or {}
    if not ctx.get("id"):
        return None, None
    deployment = claims[CLAIM + "deployment_id"]
    key = (platform_id, deployment, ctx["id"])
    row = db.execute(
        "SELECT id, course_id FROM lti_contexts WHERE platform_id = ? AND deployment_id = ? AND context_id = ?", key
    ).fetchone()
    if row is None:
        if not teacher:
            raise LaunchRefused("Your instructor has not opened AMP Dojo in this course yet.")
        name = (ctx.get("title") or ctx.get("label") or "LMS course")[:120]
        first = [(lesson, linked_deadline(claims))] if lesson else [(list(content.exercises())[0], None)]
        course_id = classroom.create(db, name, first, user.id)
        db.execute(
            "INSERT INTO lti_contexts (platform_id, deployment_id, context_id, course_id) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (*key, course_id),
        )
        row = db.execute(
            "SELECT id, course_id FROM lti_contexts WHERE platform_id = ? AND deployment_id = ? AND context_id = ?",
            key,
        ).fetchone()
    services(db, row["id"], claims)
    return row["id"], row["course_id"]


def services(db, context_ref: int, claims: dict) -> None:
    """The AGS and NRPS endpoints of the latest launch (a platform may move them)."""
    ags, nrps = claims.get(AGS_CLAIM), (claims.get(NRPS_CLAIM) or {}).get("context_memberships_url")
    if ags or nrps:
        db.execute(
            "UPDATE lti_contexts SET ags = coalesce(?, ags), nrps_url = coalesce(?, nrps_url) WHERE id = ?",
            (json.dumps(ags) if ags else None, nrps, context_ref),
        )


def _linked(db, platform_id: int, deployment: str, context_id: str) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM lti_contexts WHERE platform_id = ? AND deployment_id = ? AND context_id = ?",
            (platform_id, deployment, context_id),
        ).fetchone()
        is not None
    )


def launched_lesson(claims: dict) -> str | None:
    """The lesson of a resource link: its custom parameter `lesson` (a deep link sets it), if that lesson exists."""
    lesson = (claims.get(CLAIM + "custom") or {}).get("lesson")
    return lesson if isinstance(lesson, str) and lesson in content.exercises() else None


def linked_deadline(claims: dict) -> float | None:
    """The deadline a deep link carries (custom parameter `deadline`, UTC seconds, as the chooser wrote it)."""
    value = (claims.get(CLAIM + "custom") or {}).get("deadline")
    try:
        deadline = float(value) if isinstance(value, (str, int, float)) else None
    except ValueError:
        return None
    return deadline if deadline is not None and 0 < deadline < 1e11 else None


def _link(db, course_id: int, lesson: str, claims: dict) -> None:
    """An instructor's launch of a lesson's link puts the lesson in the course. When it brings the lesson in (the
    LMS copied a course, or the link was chosen outside one), the link's deadline comes with it; a lesson already
    there keeps its own, which an instructor may have changed or removed here since."""
    there = db.execute("SELECT 1 FROM course_lessons WHERE course_id = ? AND lesson = ?", (course_id, lesson))
    classroom.add_lesson(db, course_id, lesson, None if there.fetchone() else linked_deadline(claims))


def land(db, platform_id: int, claims: dict, teacher: bool) -> Landing:
    ctx = claims.get(CLAIM + "context") or {}
    if not teacher and ctx.get("id") and not _linked(db, platform_id, claims[CLAIM + "deployment_id"], ctx["id"]):
        raise LaunchRefused("Your instructor has not opened AMP Dojo in this course yet.")  # and no account made
    user = account(db, platform_id, claims, teacher)
    lesson = launched_lesson(claims)
    context_ref, course_id = context(db, platform_id, claims, user, teacher, lesson)
    if course_id is not None:
        if teacher and user.is_instructor:
            classroom.teach(db, course_id, user.id)
        else:
            classroom.enroll(db, course_id, user.id)
        if lesson and teacher:
            _link(db, course_id, lesson, claims)
    return Landing(user, course_id, context_ref, lesson)

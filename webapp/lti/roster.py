"""Names and Role Provisioning: the LMS course's roster, imported or refreshed into the linked course. Each member
gets the account of (platform, user id), made now if they never launched (name and email from the roster), and
joins the course as learner or instructor by their roles; the service's pages are followed by their Link headers."""

from __future__ import annotations

from pylti1p3.names_roles import NamesRolesProvisioningService

from webapp import classroom
from webapp.lti import identity, platforms
from webapp.lti.scores import TokenConnector


def refresh(db, course_id: int) -> int:
    """Imports the roster of each LMS context linked to the course; returns how many members were read."""
    count = 0
    contexts = db.execute(
        "SELECT c.nrps_url, p.* FROM lti_contexts c JOIN lti_platforms p ON p.id = c.platform_id "
        "WHERE c.course_id = ? AND c.nrps_url IS NOT NULL",
        (course_id,),
    ).fetchall()
    for ctx in contexts:
        service = NamesRolesProvisioningService(
            TokenConnector(platforms.registration(db, ctx)), {"context_memberships_url": ctx["nrps_url"]}
        )
        for member in service.get_members():
            if member.get("status", "Active") != "Active":
                continue
            teacher = identity.teaches(member.get("roles", []))
            claims = {
                "iss": ctx["issuer"],
                "sub": member["user_id"],
                "name": member.get("name"),
                "given_name": member.get("given_name"),
                "email": member.get("email"),
            }
            user = identity.account(db, ctx["id"], {k: v for k, v in claims.items() if v}, teacher)
            if teacher and user.is_instructor:
                classroom.teach(db, course_id, user.id)
            else:
                classroom.enroll(db, course_id, user.id)
            count += 1
    return count

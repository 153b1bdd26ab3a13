"""The LTI routes: login initiation and launch (the two POSTs exempt from CSRF: the platform sends them, and the
id_token's signature, nonce and state protect them), the tool's JWKS, the setup page with the URLs to paste into
an LMS and Canvas's JSON configuration, the deep-linking chooser, and the instructor's LMS actions on a course."""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone

from flask import Blueprint, abort, current_app, jsonify, redirect, render_template, request, session, url_for
from flask_login import current_user
from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException, OIDCException

from webapp import classroom, content, security
from webapp.auth import gettext, instructor_required, start_session
from webapp.db import get_db
from webapp.lti import dynamic, identity, keys, launch, platforms, roster, scores

log = logging.getLogger("amp_dojo.lti")
bp = Blueprint("lti", __name__)
DEEP_LINK = "lti_deep_link"  # in the session: the deep-linking request being answered


def tool_urls() -> dict:
    return {
        "login": url_for("lti.login", _external=True),
        "launch": url_for("lti.launch_view", _external=True),
        "jwks": url_for("lti.jwks", _external=True),
        "deep_link": url_for("lti.launch_view", _external=True),
        "canvas": url_for("lti.canvas_config", _external=True),
    }


@bp.route("/lti/login", methods=["GET", "POST"])
def login():
    try:
        return launch.login_redirect(get_db(), url_for("lti.launch_view", _external=True))
    except (LtiException, OIDCException) as exc:
        log.info("LTI login refused: %s", exc)
        return _refused(400)


@bp.post("/lti/launch")
def launch_view():
    started, db = time.perf_counter(), get_db()
    try:
        message = launch.validated(db)
    except (LtiException, ValueError, OSError) as exc:  # OSError: the platform's key set did not come
        if launch.cookie_blocked():
            link = launch.new_window_link(db, url_for("lti.login", _external=True))
            if link:
                return render_template("lti/new_window.html", link=link), 200
        log.info("LTI launch refused: %s", exc)
        return _refused(401)
    claims = message.get_launch_data()
    platform_id = message._registration.platform_id
    teacher = identity.teaches(claims.get(identity.CLAIM + "roles", []))
    try:
        landing = identity.land(db, platform_id, claims, teacher)
    except identity.LaunchRefused as exc:
        return _refused(403, str(exc))
    start_session(landing.user)
    session[launch.FRAME_FLAG] = True
    if message.is_deep_link_launch() and teacher:
        session[DEEP_LINK] = {
            "platform": platform_id,
            "deployment": claims[identity.CLAIM + "deployment_id"],
            "settings": claims.get("https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings", {}),
            "course": landing.course_id,
        }
        target = url_for("lti.choose")
    elif landing.lesson:
        target = url_for("lessons.lesson", lesson_id=landing.lesson)
    elif landing.course_id:
        target = url_for("courses.show", course_id=landing.course_id)
    else:
        target = url_for("lessons.index")
    log.info("LTI launch of %s in %.0f ms", landing.user.username, (time.perf_counter() - started) * 1000)
    return redirect(target, code=303)


@bp.get("/lti/register/<grant>")
def register(grant):
    """Dynamic registration: the LMS opens this (the admin pasted it) with its configuration's address."""
    configuration = request.args.get("openid_configuration", "")
    try:
        dynamic.check_grant(current_app.config["SECRET_KEY"], grant)
        platform_id = dynamic.register(
            get_db(),
            {**tool_urls(), "logo": url_for("static", filename="favicon.svg", _external=True)},
            configuration,
            request.args.get("registration_token"),
        )
    except dynamic.RegistrationRefused as exc:
        return _registration_refused(403 if exc.args[0] == dynamic.BAD_GRANT else 400, exc.args[0], configuration)
    except (LtiException, AssertionError, ValueError, OSError) as exc:  # the library asserts; OSError: no answer
        log.info("LTI registration with %s failed: %s", configuration, exc)
        return _registration_refused(
            502, "The LMS did not accept the registration: try again from the LMS.", configuration
        )
    platform = next(p for p in platforms.all_platforms(get_db()) if p.id == platform_id)
    page = render_template("lti/registered.html", issuer=platform.issuer, deployment=", ".join(platform.deployments))
    return page, 200, {"Content-Security-Policy": _framed_by(configuration)}


def _registration_refused(status: int, message: str, configuration: str):
    page = render_template(
        "error.html", title=gettext("LMS registration refused"), message=gettext(message), status=status
    )
    return page, status, {"Content-Security-Policy": _framed_by(configuration)}


def _framed_by(configuration: str) -> str:
    """The registration's pages may sit in the frame of the LMS that opened them (not yet a registered platform)."""
    origin = _origin(configuration) if configuration.startswith(("https://", "http://")) else ""
    return security.CSP.replace(
        "frame-ancestors 'none'", f"frame-ancestors {origin}" if origin else "frame-ancestors 'none'"
    )


def _refused(status: int, message: str | None = None):
    message = message or "This launch from your LMS could not be checked: open AMP Dojo from your course again."
    return render_template(
        "error.html", title=gettext("LMS launch refused"), message=gettext(message), status=status
    ), status


@bp.get("/lti/jwks")
def jwks():
    return jsonify(keys.jwks(get_db()))


@bp.get("/lti/setup")
@instructor_required
def setup():
    return render_template(
        "lti/setup.html",
        urls=tool_urls(),
        platforms=platforms.all_platforms(get_db()),
        canvas=json.dumps(canvas_json(), indent=2),
    )


def canvas_json() -> dict:
    """Canvas's "Paste JSON" developer key configuration for this tool."""
    urls = tool_urls()
    placement = {"message_type": "LtiDeepLinkingRequest", "target_link_uri": urls["launch"]}
    return {
        "title": "AMP Dojo",
        "description": "Mixed-precision training lessons, graded by a machine",
        "oidc_initiation_url": urls["login"],
        "target_link_uri": urls["launch"],
        "public_jwk_url": urls["jwks"],
        "scopes": [
            "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
            "https://purl.imsglobal.org/spec/lti-ags/scope/score",
            "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
            "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
        ],
        "extensions": [
            {
                "platform": "canvas.instructure.com",
                "privacy_level": "public",
                "settings": {
                    "placements": [
                        {"placement": "assignment_selection", **placement},
                        {"placement": "link_selection", **placement},
                    ]
                },
            }
        ],
        "custom_fields": {},
    }


@bp.get("/lti/canvas.json")
def canvas_config():
    return jsonify(canvas_json())


@bp.route("/lti/deep-link", methods=["GET", "POST"], endpoint="choose")
@instructor_required
def choose():
    """The instructor picks a lesson (and a deadline); the answer is a signed resource link the platform saves."""
    pending = session.get(DEEP_LINK)
    if not pending:
        abort(404)
    lessons = content.exercises()
    if request.method == "GET":
        return render_template("lti/deep_link.html", lessons=lessons, titles=_titles(lessons))
    lesson = request.form.get("lesson", "")
    if lesson not in lessons:
        abort(400)
    deadline = _deadline(request.form.get("deadline", ""))
    if pending.get("course"):
        classroom.add_lesson(get_db(), pending["course"], lesson, deadline)
    jwt_value = deep_link_response(get_db(), pending, lesson, deadline)
    session.pop(DEEP_LINK, None)
    response = current_app.make_response(
        render_template(
            "lti/deep_link_response.html", action=pending["settings"]["deep_link_return_url"], jwt=jwt_value
        )
    )
    response.headers["Content-Security-Policy"] = lti_csp(_origin(pending["settings"]["deep_link_return_url"]))
    return response


def _titles(lessons) -> dict:
    from webapp.courses import lesson_title
    from webapp.lessons import current_lang

    return {lesson_id: lesson_title(lesson_id, current_lang()) for lesson_id in lessons}


def _deadline(text: str) -> float | None:
    """A date (YYYY-MM-DD) as the end of that day, UTC, as course deadlines are."""
    try:
        day = datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return day.timestamp() + 86399


def deep_link_response(db, pending: dict, lesson: str, deadline: float | None) -> str:
    row = db.execute("SELECT * FROM lti_platforms WHERE id = ?", (pending["platform"],)).fetchone()
    from webapp.courses import lesson_title

    resource = DeepLinkResource().set_url(url_for("lti.launch_view", _external=True))
    resource.set_title(lesson_title(lesson, "en")).set_custom_params({"lesson": lesson})
    if deadline is not None:
        resource.set_custom_params({"lesson": lesson, "deadline": str(int(deadline))})
    return DeepLink(platforms.registration(db, row), pending["deployment"], pending["settings"]).get_response_jwt(
        [resource]
    )


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@bp.post("/teach/courses/<int:course_id>/lti/resend")
@instructor_required
def resend(course_id):
    db = get_db()
    if not classroom.teaches(db, course_id, current_user.id):
        abort(404)
    scores.send_all_again(db, current_app.config, course_id)
    return redirect(url_for("lti.course_lms", course_id=course_id), code=303)


@bp.post("/teach/courses/<int:course_id>/lti/roster")
@instructor_required
def refresh_roster(course_id):
    db = get_db()
    if not classroom.teaches(db, course_id, current_user.id):
        abort(404)
    roster.refresh(db, course_id)
    return redirect(url_for("lti.course_lms", course_id=course_id), code=303)


@bp.get("/teach/courses/<int:course_id>/lti")
@instructor_required
def course_lms(course_id):
    """The course's link to its LMS: scores that have not reached it (and why), and the two actions."""
    db = get_db()
    if not classroom.teaches(db, course_id, current_user.id):
        abort(404)
    return render_template(
        "lti/course.html",
        course=classroom.get(db, course_id),
        failures=scores.failures(db, course_id),
        course_id=course_id,
    )


@bp.app_context_processor
def _lms_page():
    """lms_page(course_id): the course's LMS page, for a course linked to an LMS (the dashboard links it)."""

    def lms_page(course_id: int) -> str | None:
        linked = get_db().execute("SELECT 1 FROM lti_contexts WHERE course_id = ? LIMIT 1", (course_id,)).fetchone()
        return url_for("lti.course_lms", course_id=course_id) if linked else None

    return {"lms_page": lms_page}


def exempt_from_csrf(app) -> None:
    """The platform posts these two itself: no session of ours, no token to echo; the launch's own checks stand."""
    for view in (login, launch_view):
        security.csrf.exempt(view)


def frame_headers(response):
    """after_request: LTI pages (the login, the launch, and every page of a session opened by a launch) may be
    framed by the registered platforms only; every other page keeps frame-ancestors 'none'."""
    lti_page = request.endpoint in ("lti.login", "lti.launch_view", "lti.choose")
    if (lti_page or session.get(launch.FRAME_FLAG)) and "Content-Security-Policy" not in response.headers:
        response.headers["Content-Security-Policy"] = lti_csp()
    return response


def lti_csp(form_target: str | None = None) -> str:
    """The app's policy, framed by the registered platforms (none registered: by no one), and with `form_target`
    (the platform's deep-linking return) among the forms' destinations."""
    policy = security.CSP
    origins = platforms.origins(get_db())
    if origins:
        policy = policy.replace("frame-ancestors 'none'", "frame-ancestors " + " ".join(origins))
    if form_target:
        policy = policy.replace("form-action 'self'", f"form-action 'self' {form_target}")
    return policy

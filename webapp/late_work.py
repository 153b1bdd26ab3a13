"""The instructor's forms for late work: a course's late policy, and one learner's extension on one lesson (a new
deadline, the end of a day in UTC as every deadline is, with a note saying why). The rules themselves are in
webapp/late_policy.py, their storage in webapp/deadlines.py."""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, request, url_for
from flask_login import current_user

from webapp import classroom, deadlines, late_policy
from webapp.auth import gettext, instructor_required
from webapp.dashboard import _taught_course, end_of_day

bp = Blueprint("late_work", __name__, url_prefix="/teach")


def _percent(name: str) -> float:
    try:
        return float(request.form.get(name) or 0) / 100
    except ValueError:
        return -1.0  # refused by LatePolicy, with its reason


@bp.post("/courses/<int:course_id>/late-policy")
@instructor_required
def set_policy(course_id):
    db, _course = _taught_course(course_id)
    try:
        chosen = late_policy.LatePolicy(request.form.get("kind", ""), _percent("per_day"), _percent("floor"))
    except late_policy.PolicyError as exc:
        flash(gettext(str(exc)), "error")
    else:
        deadlines.set_policy(db, course_id, chosen)
        flash(gettext("The late policy is saved."), "saved")
    return redirect(url_for("dashboard.course", course_id=course_id), code=303)


@bp.post("/courses/<int:course_id>/learners/<int:user_id>/extensions")
@instructor_required
def grant(course_id, user_id):
    """Grants (or, with remove=yes, takes back) one learner's extension on one of the course's lessons."""
    db, _course = _taught_course(course_id)
    person = classroom.learner_in(db, course_id, user_id)
    lesson = request.form.get("lesson", "")
    if person is None or lesson not in {item["lesson"] for item in classroom.lessons(db, course_id)}:
        abort(404)
    back = redirect(url_for("dashboard.learner", course_id=course_id, user_id=user_id), code=303)
    if request.form.get("remove") == "yes":
        deadlines.revoke(db, course_id, user_id, lesson)
        flash(gettext("The extension is taken back."), "saved")
        return back
    try:
        deadline = end_of_day(request.form.get("deadline", ""))
        deadlines.grant(db, course_id, user_id, lesson, deadline, request.form.get("note", ""), current_user.id)
    except ValueError as exc:
        message = str(exc) if isinstance(exc, late_policy.PolicyError) else "A deadline is a date (YYYY-MM-DD)."
        flash(gettext(message), "error")
        return back
    flash(gettext("{name} has a new deadline.", name=person["username"]), "saved")
    return back

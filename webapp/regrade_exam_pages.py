"""The instructor's pages for a course's regrades (start one for a lesson, watch its progress, see who would
flip, cancel or apply it: webapp/regrades.py) and its exam window (set or clear it, and read every learner's
attempts with their times: webapp/exams.py). Course pages for the instructors who teach the course only."""

from __future__ import annotations

from datetime import datetime, timezone

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    get_flashed_messages,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_login import current_user

from webapp import classroom, exams, regrades
from webapp.auth import gettext, instructor_required
from webapp.courses import lesson_title
from webapp.db import get_db
from webapp.i18n import noop_gettext
from webapp.lessons import current_lang

bp = Blueprint("term", __name__, url_prefix="/teach")


@bp.context_processor
def _words():
    return {
        "regrade_states": {
            regrades.RUNNING: gettext("Grading again"),
            regrades.PREVIEWED: gettext("Preview ready"),
            regrades.APPLIED: gettext("Applied"),
            regrades.CANCELLED: gettext("Cancelled"),
        },
        "exam_outcomes": {
            "accepted": gettext("Submitted"),
            "early": gettext("Refused: before the window"),
            "closed": gettext("Refused: after the window"),
        },
    }


def _taught(course_id: int):
    db = get_db()
    course = classroom.get(db, course_id)
    if course is None or not classroom.teaches(db, course_id, current_user.id):
        abort(404)
    return db, course


def _titles(db, course_id: int) -> dict[str, str]:
    lang = current_lang()
    return {r["lesson"]: lesson_title(r["lesson"], lang) for r in classroom.lessons(db, course_id)}


@bp.route("/courses/<int:course_id>/regrades", methods=["GET", "POST"])
@instructor_required
def regrade_list(course_id):
    """The course's regrades, and a form that starts one (POST: one route, so an id past the database's
    integers is a 404 whatever the method)."""
    db, course = _taught(course_id)
    if request.method == "POST":
        return _start(db, course_id)
    return render_template(
        "dashboard/regrades.html",
        course=course,
        titles=_titles(db, course_id),
        regrades=regrades.of_course(db, course_id),
        notices=get_flashed_messages(with_categories=True),
    )


def _start(db, course_id: int):
    lesson = request.form.get("lesson", "")
    if lesson not in _titles(db, course_id):
        abort(400)
    queue = current_app.extensions["amp_dojo_queue"]
    rid = regrades.start(db, queue, current_app.config, course_id, lesson, current_user.username)
    return redirect(url_for("term.regrade_show", course_id=course_id, rid=rid), code=303)


def _regrade(course_id: int, rid: int):
    db, course = _taught(course_id)
    regrade = regrades.get(db, rid)
    if regrade is None or regrade["course_id"] != course_id:
        abort(404)
    return db, course, regrade


@bp.get("/courses/<int:course_id>/regrades/<int:rid>")
@instructor_required
def regrade_show(course_id, rid):
    db, course, regrade = _regrade(course_id, rid)
    regrades.collect(db, current_app.extensions["amp_dojo_queue"], current_app.config, rid)
    return render_template(
        "dashboard/regrade.html",
        course=course,
        regrade=regrades.get(db, rid),
        title=_titles(db, course_id).get(regrade["lesson"], regrade["lesson"]),
        progress=regrades.progress(db, rid),
        flips=regrades.flips(db, rid, current_lang()),
        notices=get_flashed_messages(with_categories=True),
    )


@bp.post("/courses/<int:course_id>/regrades/<int:rid>/cancel")
@instructor_required
def regrade_cancel(course_id, rid):
    db, _course, _regrade_row = _regrade(course_id, rid)
    regrades.cancel(db, current_app.extensions["amp_dojo_queue"], rid)
    return redirect(url_for("term.regrade_show", course_id=course_id, rid=rid), code=303)


@bp.post("/courses/<int:course_id>/regrades/<int:rid>/apply")
@instructor_required
def regrade_apply(course_id, rid):
    db, _course, _regrade_row = _regrade(course_id, rid)
    try:
        n = regrades.apply(db, rid, current_app.config)
        flash(gettext("Applied. Verdicts changed: {n}. The old verdicts stay in the history.", n=n), "saved")
    except regrades.RegradeError as exc:
        flash(gettext(exc.message), "error")
    return redirect(url_for("term.regrade_show", course_id=course_id, rid=rid), code=303)


# ---------- the exam window ----------


def _utc(text: str) -> float | None:
    """A datetime-local field's value ("2026-12-06T14:30"), read as UTC."""
    try:
        return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()
    except (TypeError, ValueError):
        return None


def _field(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M")


@bp.route("/courses/<int:course_id>/exam", methods=["GET", "POST"])
@instructor_required
def exam(course_id):
    db, course = _taught(course_id)
    titles = _titles(db, course_id)
    if request.method == "POST":
        if request.form.get("clear"):
            exams.clear(db, course_id, current_app.config)
            flash(gettext("The exam window is cleared: the lessons take submissions as before."), "saved")
            return redirect(url_for("term.exam", course_id=course_id), code=303)
        starts, ends = _utc(request.form.get("starts_at", "")), _utc(request.form.get("ends_at", ""))
        picked = [lesson for lesson in titles if request.form.get(f"exam-{lesson}")]
        try:
            if starts is None or ends is None:
                raise exams.ExamError(noop_gettext("Give the exam's start and end."))
            exams.save(
                db, course_id, starts, ends, picked or None, bool(request.form.get("hold_results")), current_app.config
            )
            flash(gettext("The exam window is saved."), "saved")
        except exams.ExamError as exc:
            flash(gettext(exc.message), "error")
        return redirect(url_for("term.exam", course_id=course_id), code=303)
    window = exams.get(db, course_id)
    covered = exams.lessons_of(window)
    return render_template(
        "dashboard/exam.html",
        course=course,
        titles=titles,
        window=window,
        covered=covered,
        fields={
            "starts_at": _field(window["starts_at"] if window else None),
            "ends_at": _field(window["ends_at"] if window else None),
        },
        attempts=exams.attempts(db, course_id),
        notices=get_flashed_messages(with_categories=True),
    )

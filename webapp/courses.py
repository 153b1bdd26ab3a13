"""Courses as a learner sees them: the courses they joined with their
progress in each, joining one with its code, and a course's page. Instructors
are sent to their dashboard (webapp/dashboard.py)."""

from __future__ import annotations

import time
from dataclasses import replace

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for
from flask_login import current_user

from webapp import accounts, classroom, content, deadlines, exams
from webapp.auth import gettext, signin_required
from webapp.db import get_db
from webapp.lessons import current_lang
from webapp.security import client_ip

bp = Blueprint("courses", __name__)


def lesson_title(lesson_id: str, lang: str) -> str:
    from grader.lesson.base import localize

    ex = content.exercises().get(lesson_id)
    return localize(ex.title, lang) if ex else lesson_id


def course_rows(db, course_id: int, learner: str, user_id: int | None = None, counted: bool = False) -> list[dict]:
    """The course's lessons with this learner's progress on each, against their own deadline (an extension's,
    where the instructor granted one), with the score that counts under the late policy (`counted`: needs
    `user_id`); a verdict an exam holds back shows in neither yet."""
    lang, now = current_lang(), time.time()
    table = classroom.progress(db, course_id, learner)
    lessons = classroom.lessons(db, course_id)
    scores = (
        deadlines.counted_scores(db, course_id, [{"id": user_id, "learner": learner}], lessons, now) if counted else {}
    )
    held = exams.holding(db, learner, now)
    rows = []
    for item in lessons:
        mine = scores.get((learner, item["lesson"])) or deadlines.Counted(item["deadline"], None, None, None)
        p = table.get((learner, item["lesson"])) or classroom.Progress()
        if item["lesson"] in held and p.passed_at is not None and p.passed_at >= held[item["lesson"]][0]:
            p = replace(p, passed_at=None, attempts_to_pass=None, best_score=None)  # an exam holds it back
        rows.append(
            {
                "lesson": item["lesson"],
                "title": lesson_title(item["lesson"], lang),
                "progress": p,
                "deadline": mine.deadline,
                "extended": mine.extension is not None,
                "counted": mine.score,
                "overdue": mine.deadline is not None and p.passed_at is None and now > mine.deadline,
                "late": p.late(mine.deadline),
                "url": url_for("lessons.lesson", lesson_id=item["lesson"]),
            }
        )
    return rows


@bp.get("/courses")
@signin_required
def index(error: str | None = None, status: int = 200):
    db = get_db()
    if current_user.is_instructor:
        return render_template(
            "courses/index.html", taught=classroom.taught_by(db, current_user.id), joined=[], error=error
        ), status
    joined = []
    for course in classroom.joined_by(db, current_user.id):
        rows = course_rows(db, course["id"], current_user.learner)
        joined.append(
            {"course": course, "total": len(rows), "passed": sum(r["progress"].state == "passed" for r in rows)}
        )
    return render_template("courses/index.html", taught=[], joined=joined, error=error), status


@bp.post("/courses/join")
@signin_required
def join():
    """A wrong code counts against the account (JOIN_FAILURES_PER_ACCOUNT in JOIN_WINDOW_S), counted before the
    code is looked up so that codes sent at once count one each; a right one is uncounted. Once the address has
    JOIN_FAILURES_PER_IP wrong codes, each account there gets one try instead: a classmate who has not guessed
    still joins, and new accounts (SIGNUPS_PER_IP an hour) buy one guess each, so guessing stays bounded."""
    if current_user.is_instructor:
        abort(403)
    db, config = get_db(), current_app.config
    now, window = time.time(), float(config["JOIN_WINDOW_S"])
    keys = (f"join-account:{current_user.id}", f"join-ip:{client_ip() or '-'}")
    per_account, per_ip = int(config["JOIN_FAILURES_PER_ACCOUNT"]), int(config["JOIN_FAILURES_PER_IP"])
    if per_ip and accounts.count_attempts(db, keys[1], window, now, per_ip) >= per_ip:
        per_account = 1
    limits = [(keys[0], per_account), (keys[1], 0)]
    attempt = accounts.take_attempt(db, limits, window, now)
    if attempt.wait:
        response = current_app.make_response(
            index(error=gettext("Too many wrong join codes: try again in {n} s.", n=attempt.wait), status=429)
        )
        response.headers["Retry-After"] = str(attempt.wait)
        return response
    course = classroom.join(db, request.form.get("code", ""), current_user.id)
    if course is None:
        return index(error=gettext("No course has that code: check it with your instructor."), status=404)
    for key in keys:
        accounts.forget_attempt(db, attempt, key)
    return redirect(url_for("courses.show", course_id=course["id"]), code=303)


@bp.get("/courses/<int:course_id>")
@signin_required
def show(course_id):
    db = get_db()
    course = classroom.get(db, course_id)
    if course is None:
        abort(404)
    if classroom.teaches(db, course_id, current_user.id):
        return redirect(url_for("dashboard.course", course_id=course_id))
    if not classroom.enrolled(db, course_id, current_user.id):
        abort(404)
    key, values = deadlines.policy(db, course_id).words()
    return render_template(
        "courses/show.html",
        course=course,
        rows=course_rows(db, course_id, current_user.learner, current_user.id, counted=True),
        policy_words=gettext(key, **values),
    )

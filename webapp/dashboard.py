"""The instructor's pages: creating a course, its dashboard (each lesson's
passed / attempted / not started, median attempts and time to pass; the
class's mistakes ranked by how many learners made them, with an example each
and a bar chart drawn on the server as SVG; every learner's progress), one
learner's record with every submission's code and verdict, the gradebook as
CSV, and the site settings.

Every page here is for instructors only (a learner's account gets 403), and a
course's pages only for the instructors who teach it (anyone else: 404)."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone

from flask import Blueprint, Response, abort, current_app, redirect, render_template, request, url_for
from flask_login import current_user
from markupsafe import Markup, escape

from webapp import accounts, bounds, classroom, code_views, content, findings
from webapp.auth import gettext, instructor_required
from webapp.courses import lesson_title
from webapp.db import get_db
from webapp.lessons import PROGRESS_LABELS, current_lang

bp = Blueprint("dashboard", __name__, url_prefix="/teach")
CHART_ROW_PX, CHART_LABEL_PX, CHART_BAR_PX = 30, 230, 420
SUBMISSIONS_PER_PAGE = 20


@bp.app_template_filter("when")
def when(ts: float | None) -> str:
    """A moment in UTC, the same for everyone in the class whatever their time zone."""
    if ts is None:
        return "–"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@bp.app_template_filter("day")
def day(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d")


@bp.app_template_filter("duration")
def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes = int(round(seconds / 60))
    if minutes < 1:
        return gettext("{n} s", n=int(round(seconds)))
    if minutes < 60:
        return gettext("{n} min", n=minutes)
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return gettext("{h} h {m} min", h=hours, m=minutes)
    days, hours = divmod(hours, 24)
    return gettext("{d} d {h} h", d=days, h=hours)


def _taught_course(course_id: int):
    db = get_db()
    course = classroom.get(db, course_id)
    if course is None or not classroom.teaches(db, course_id, current_user.id):
        abort(404)  # another instructor's course does not exist for this one
    return db, course


# ---------- creating a course ----------


def _lesson_choices(form=None) -> list[dict]:
    lang = current_lang()
    choices = []
    for n, ex in enumerate(content.exercises().values(), 1):
        picked = form is None or form.get(f"lesson-{ex.id}") == "on"
        choices.append(
            {
                "id": ex.id,
                "title": lesson_title(ex.id, lang),
                "checked": form is not None and picked,
                "position": (form or {}).get(f"position-{ex.id}", n),
                "deadline": (form or {}).get(f"deadline-{ex.id}", ""),
            }
        )
    return choices


def _parse_lessons(form) -> list[tuple[str, float | None]]:
    """The picked lessons in the order of their position fields (ties: the lesson list's order)."""
    picked = []
    for n, ex_id in enumerate(content.exercises()):
        if form.get(f"lesson-{ex_id}") != "on":
            continue
        try:
            position = int(form.get(f"position-{ex_id}") or n + 1)
        except ValueError:
            raise classroom.CourseError(gettext("A position is a whole number.")) from None
        deadline = None
        if form.get(f"deadline-{ex_id}"):
            try:  # the end of that day, in UTC
                deadline = (
                    datetime.strptime(form[f"deadline-{ex_id}"], "%Y-%m-%d")
                    .replace(hour=23, minute=59, second=59, tzinfo=timezone.utc)
                    .timestamp()
                )
            except ValueError:
                raise classroom.CourseError(gettext("A deadline is a date (YYYY-MM-DD).")) from None
        picked.append((position, n, ex_id, deadline))
    return [(ex_id, deadline) for _p, _n, ex_id, deadline in sorted(picked)]


@bp.route("/courses/new", methods=["GET", "POST"])
@instructor_required
def new_course():
    if request.method == "GET":
        return render_template("dashboard/new_course.html", choices=_lesson_choices(), name="", error=None)
    try:
        course_id = classroom.create(
            get_db(), request.form.get("name", ""), _parse_lessons(request.form), current_user.id
        )
    except classroom.CourseError as exc:
        return render_template(
            "dashboard/new_course.html",
            choices=_lesson_choices(request.form),
            name=request.form.get("name", ""),
            error=gettext(exc.message),
        ), 400
    return redirect(url_for("dashboard.course", course_id=course_id), code=303)


# ---------- a course's dashboard ----------


def mistake_chart(mistakes: list, total_learners: int) -> dict:
    """Coordinates of a horizontal bar chart: one bar per finding, its length the share of learners."""
    bars = []
    for i, m in enumerate(mistakes):
        share = m["learners"] / total_learners if total_learners else 0
        bars.append(
            {
                "label": m["finding_id"],
                "learners": m["learners"],
                "y": i * CHART_ROW_PX,
                "width": max(2, round(share * CHART_BAR_PX)),
                "share": share,
            }
        )
    return {
        "bars": bars,
        "label_px": CHART_LABEL_PX,
        "bar_px": CHART_BAR_PX,
        "row_px": CHART_ROW_PX,
        "width": CHART_LABEL_PX + CHART_BAR_PX + 60,
        "height": max(1, len(bars)) * CHART_ROW_PX,
    }


def progress_cells(records: list, labels: dict[str, str]) -> Markup:
    """One learner's row of badges, as HTML made here: a course of 200 learners has a thousand cells, and
    escaping each value in the template took most of the page's time. Only fixed names, our own (escaped)
    labels and counts go in."""
    cells = []
    for p in records:
        state = p.state if p else "not_started"  # one of three fixed names
        count = f' <span class="muted">{int(p.attempts)}×</span>' if p and p.attempts else ""
        cells.append(f'<td><span class="badge badge-{state}">{labels[state]}</span>{count}</td>')
    return Markup("".join(cells))


@bp.get("/courses/<int:course_id>")
@instructor_required
def course(course_id):
    db, course = _taught_course(course_id)
    lang = current_lang()
    lessons = classroom.lessons(db, course_id)
    lesson_ids = [item["lesson"] for item in lessons]
    learners = classroom.learners(db, course_id)
    table = classroom.progress(db, course_id)
    stats = classroom.lesson_stats(lesson_ids, [u["learner"] for u in learners], table)
    mistakes = [{**m, "message": findings.message(m, lang)} for m in classroom.mistakes(db, course_id)]
    titles = {lesson: lesson_title(lesson, lang) for lesson in lesson_ids}
    labels = {state: str(escape(gettext(text))) for state, text in PROGRESS_LABELS.items()}
    matrix = [
        (
            u["username"],
            f"/teach/courses/{course_id}/learners/{u['id']}",
            progress_cells([table.get((u["learner"], lesson)) for lesson in lesson_ids], labels),
        )
        for u in learners
    ]
    return render_template(
        "dashboard/course.html",
        course=course,
        lessons=lessons,
        titles=titles,
        stats=stats,
        learners=learners,
        mistakes=mistakes,
        chart=mistake_chart(mistakes, len(learners)),
        matrix=matrix,
    )


@bp.get("/courses/<int:course_id>/learners/<int:user_id>")
@instructor_required
def learner(course_id, user_id):
    db, course = _taught_course(course_id)
    person = classroom.learner_in(db, course_id, user_id)
    if person is None:
        abort(404)
    lang = current_lang()
    lessons = classroom.lessons(db, course_id)
    table = classroom.progress(db, course_id, person["learner"])
    rows = [
        {
            "lesson": item["lesson"],
            "title": lesson_title(item["lesson"], lang),
            "deadline": item["deadline"],
            "progress": table.get((person["learner"], item["lesson"])) or classroom.Progress(),
        }
        for item in lessons
    ]
    pages = _pages(classroom.count_submissions(db, course_id, person["learner"]))
    submissions = classroom.submissions_of(
        db, course_id, person["learner"], SUBMISSIONS_PER_PAGE, (pages["page"] - 1) * SUBMISSIONS_PER_PAGE
    )
    found = findings.of_submissions(db, [s["id"] for s in submissions])
    views = code_views.of_submissions(db, submissions)
    shown = [
        {
            "row": s,
            "title": lesson_title(s["lesson"], lang),
            "findings": [
                {
                    "finding_id": f["finding_id"],
                    "line": f["line"],
                    "message": bounds.marker(findings.message(f, lang) or "", 500),
                }
                for f in found.get(s["id"], [])[:20]
            ],
            "code_html": Markup(views[s["id"]][0]),
            "more_lines": views[s["id"]][1],
        }
        for s in submissions
    ]
    return render_template(
        "dashboard/learner.html", course=course, person=person, rows=rows, submissions=shown, pages=pages
    )


def _pages(total: int) -> dict:
    """The page asked for (?page=, from 1, clamped to the pages there are) of SUBMISSIONS_PER_PAGE: a learner
    with hundreds of submissions must not make one page of megabytes."""
    last = max(1, -(-total // SUBMISSIONS_PER_PAGE))
    page = request.args.get("page", "1")
    page = int(page) if page.isascii() and page.isdigit() and len(page) < 7 else 1
    page = min(max(1, page), last)
    return {
        "page": page,
        "last": last,
        "total": total,
        "newer": page - 1 if page > 1 else None,
        "older": page + 1 if page < last else None,
    }


@bp.get("/courses/<int:course_id>/gradebook.csv")
@instructor_required
def gradebook(course_id):
    db, course = _taught_course(course_id)
    lesson_ids = [item["lesson"] for item in classroom.lessons(db, course_id)]
    table = classroom.progress(db, course_id)
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["username"]
    for lesson in lesson_ids:
        header += [f"{lesson} best score", f"{lesson} passed at"]
    writer.writerow(header)
    for person in classroom.learners(db, course_id):
        row = [_cell(person["username"])]
        for lesson in lesson_ids:
            p = table.get((person["learner"], lesson))
            best = p.best_score if p else None
            row += [
                "" if best is None else f"{best:.4f}",
                ""
                if not p or p.passed_at is None
                else datetime.fromtimestamp(p.passed_at, timezone.utc).isoformat(timespec="seconds"),
            ]
        writer.writerow(row)
    filename = f"gradebook-course-{course_id}.csv"
    return Response(
        out.getvalue(), mimetype="text/csv", headers={"Content-Disposition": f'attachment; filename="{filename}"'}
    )


def _cell(text: str) -> str:
    """A spreadsheet must not read a cell as a formula (usernames cannot start so; this is the second wall)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# ---------- site settings ----------


@bp.route("/settings", methods=["GET", "POST"])
@instructor_required
def settings():
    db = get_db()
    saved = False
    if request.method == "POST":
        accounts.set_setting(db, "anonymous_use", "on" if request.form.get("anonymous_use") == "on" else "off")
        saved = True
    return render_template(
        "dashboard/settings.html", saved=saved, anonymous_use=accounts.anonymous_allowed(db, current_app.config)
    )

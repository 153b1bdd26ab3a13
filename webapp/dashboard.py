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

from flask import (
    Blueprint,
    Response,
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
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name

from webapp import accounts, bounds, classroom, code_views, content, deadlines, findings, i18n, late_policy, passwords
from webapp import gradebook as grades
from webapp.auth import gettext, instructor_required
from webapp.courses import lesson_title
from webapp.db import get_db
from webapp.lessons import PROGRESS_LABELS, current_lang
from webapp.tutor import policy as tutor_policy

bp = Blueprint("dashboard", __name__, url_prefix="/teach")
SUBMISSIONS_PER_PAGE = 20


NBSP = "\u00a0"


@bp.app_template_filter("when")
def when(ts: float | None) -> str:
    """A moment in UTC, the same for everyone in the class whatever their time zone, as the page's language writes
    dates ("Dec 4, 2026, 1:27:41 PM UTC", "4 dic 2026, 13:27:41 UTC"), its spaces unbreakable: a narrow column
    wraps before or after a date, never inside it."""
    return i18n.format_moment(ts, current_lang()).replace(" ", NBSP)


@bp.app_template_filter("day")
def day(ts: float | None) -> str:
    """A deadline's day as the page's language writes it ("Jan 31, 2030", "31 gen 2030"), unbreakable too."""
    return "" if ts is None else i18n.format_day(ts, current_lang()).replace(" ", NBSP)


def iso_day(ts: float | None) -> str:
    """A day as a date field's value (YYYY-MM-DD): forms only, never shown as text."""
    return "" if ts is None else datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d")


def end_of_day(text: str) -> float:
    """A YYYY-MM-DD day's end in UTC, as every deadline is (ValueError for anything else)."""
    return datetime.strptime(text, "%Y-%m-%d").replace(hour=23, minute=59, second=59, tzinfo=timezone.utc).timestamp()


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


@bp.app_template_filter("median")
def median(value: float | None) -> str:
    """A median the same way in every row: a whole number as one ("3", never "3.0"), else one decimal (with the
    page's decimal separator: "2,5" in Italian and Indonesian)."""
    if value is None:
        return "–"
    if float(value).is_integer():
        return str(int(value))
    return i18n.format_number(value, current_lang(), ".1f")


def _taught_course(course_id: int):
    db = get_db()
    course = classroom.get(db, course_id)
    if course is None or not classroom.teaches(db, course_id, current_user.id):
        abort(404)  # another instructor's course does not exist for this one
    return db, course


# ---------- creating a course ----------


def _lesson_choices(form=None, current=None) -> list[dict]:
    """The form's rows: every lesson, as the form sent it back, else as the course has it (`current`: its
    lessons), else none picked."""
    lang = current_lang()
    if form is None and current is not None:
        form = {}
        for item in current:
            form[f"lesson-{item['lesson']}"] = "on"
            form[f"position-{item['lesson']}"] = item["position"]
            form[f"deadline-{item['lesson']}"] = iso_day(item["deadline"])
    choices = []
    for n, ex in enumerate(content.exercises().values(), 1):
        picked = form is None or form.get(f"lesson-{ex.id}") == "on"
        position = (form or {}).get(f"position-{ex.id}", n)
        if current is not None and f"lesson-{ex.id}" not in form:
            position = len(current) + n  # a lesson not in the course yet goes after those that are
        choices.append(
            {
                "id": ex.id,
                "title": lesson_title(ex.id, lang),
                "checked": form is not None and picked,
                "position": position,
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
            try:
                deadline = end_of_day(form[f"deadline-{ex_id}"])
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
        picked = _parse_lessons(request.form)
        course_id = classroom.create(get_db(), request.form.get("name", ""), picked, current_user.id)
    except classroom.CourseError as exc:
        return render_template(
            "dashboard/new_course.html",
            choices=_lesson_choices(request.form),
            name=request.form.get("name", ""),
            error=gettext(exc.message),
        ), 400
    _warn_past_deadlines(picked)
    return redirect(url_for("dashboard.course", course_id=course_id), code=303)


def _warn_past_deadlines(picked: list[tuple[str, float | None]]) -> None:
    """Said on the dashboard the form leads to: a past deadline is kept (it may be on purpose), not unseen."""
    lang = current_lang()
    for lesson in classroom.past_deadlines(picked):
        deadline = dict(picked)[lesson]
        flash(
            gettext(
                "The deadline of {lesson} ({date}) is already past: every pass from now on counts as late.",
                lesson=lesson_title(lesson, lang),
                date=day(deadline),
            ),
            "warning",
        )


@bp.route("/courses/<int:course_id>/edit", methods=["GET", "POST"])
@instructor_required
def edit_course(course_id):
    db, course = _taught_course(course_id)
    if request.method == "GET":
        return render_template(
            "dashboard/edit_course.html",
            course=course,
            choices=_lesson_choices(current=classroom.lessons(db, course_id)),
            name=course["name"],
            error=None,
            tutor_switch=bool(course["tutor_enabled"]) if tutor_policy.enabled(current_app.config) else None,
        )
    try:
        picked = _parse_lessons(request.form)
        classroom.update(db, course_id, request.form.get("name", ""), picked)
        if tutor_policy.enabled(current_app.config):
            tutor_policy.switch(db, course_id, request.form.get("tutor") == "on")
    except classroom.CourseError as exc:
        return render_template(
            "dashboard/edit_course.html",
            course=course,
            choices=_lesson_choices(request.form),
            name=request.form.get("name", ""),
            error=gettext(exc.message),
        ), 400
    flash(gettext("The course is saved."), "saved")
    _warn_past_deadlines(picked)
    return redirect(url_for("dashboard.course", course_id=course_id), code=303)


@bp.post("/courses/<int:course_id>/delete")
@instructor_required
def delete_course(course_id):
    db, course = _taught_course(course_id)
    if request.form.get("confirm") != "yes":
        return render_template(
            "dashboard/edit_course.html",
            course=course,
            choices=_lesson_choices(current=classroom.lessons(db, course_id)),
            name=course["name"],
            error=gettext("Tick the box to confirm that the course is to be deleted."),
        ), 400
    classroom.delete(db, course_id)
    return redirect(url_for("courses.index"), code=303)


@bp.post("/courses/<int:course_id>/learners/<int:user_id>/remove")
@instructor_required
def remove_learner(course_id, user_id):
    db, course = _taught_course(course_id)
    person = classroom.learner_in(db, course_id, user_id)
    if person is None:
        abort(404)
    if request.form.get("confirm") != "yes":
        flash(gettext("Tick the box to confirm that {name} is to leave the course.", name=person["username"]), "error")
        return redirect(url_for("dashboard.learner", course_id=course_id, user_id=user_id), code=303)
    classroom.remove_learner(db, course_id, user_id)
    flash(gettext("{name} has left the course.", name=person["username"]), "saved")
    return redirect(url_for("dashboard.course", course_id=course_id), code=303)


@bp.post("/courses/<int:course_id>/learners/<int:user_id>/reset-link")
@instructor_required
def reset_link(course_id, user_id):
    """A one-time link that sets a new password for a learner of this course, shown to the instructor to hand
    over (webapp/passwords.py). Only a learner's: a course's learners are learners' accounts, never an
    instructor's, and another course's learner does not exist here (404)."""
    db, course = _taught_course(course_id)
    person = classroom.learner_in(db, course_id, user_id)
    user = accounts.by_id(db, user_id) if person is not None else None
    if user is None or user.role != "learner":
        abort(404)
    config = current_app.config
    link = passwords.reset_link(config, passwords.reset_token(db, config, user.id), request.host_url)
    return render_template(
        "dashboard/reset_link.html", course=course, person=person, link=link, hours=passwords.hours_valid(config)
    )


# ---------- a course's dashboard ----------


def mistake_chart(mistakes: list, total_learners: int) -> dict:
    """A horizontal bar chart: one bar per finding, its length the share of learners (in percent, at least a
    sliver so that a bar is always seen)."""
    bars = []
    for m in mistakes:
        share = m["learners"] / total_learners if total_learners else 0
        bars.append(
            {
                "label": m["label"],
                "finding_id": m["finding_id"],
                "lesson": m.get("lesson_title", ""),
                "learners": m["learners"],
                "share": share,
                "percent": max(1, round(100 * share)),
            }
        )
    return {"bars": bars}


def cell_labels() -> dict[str, str]:
    """The words of the learners' table, escaped once for all its cells."""
    labels = {state: str(escape(gettext(text))) for state, text in PROGRESS_LABELS.items()}
    labels["late"] = str(escape(gettext("Late")))
    labels["late_title"] = str(escape(gettext("Passed after the deadline")))
    labels["one_submission"] = str(escape(gettext("1 submission")))
    labels["submissions"] = str(escape(gettext("{n} submissions")))
    return labels


def progress_cells(
    records: list, labels: dict[str, str], deadlines: list | None = None, titles: list[str] | None = None
) -> Markup:
    """One learner's row of badges, as HTML made here: a course of 200 learners has a thousand cells, and
    escaping each value in the template took most of the page's time. Only fixed names, our own (escaped)
    labels and counts go in. After each badge: how many submissions the learner made of the lesson, and a
    "late" mark where the first pass came after the lesson's deadline (`deadlines`, in the records' order). Each
    cell is labelled with its lesson's title (`titles`, escaped), shown before it where a phone stacks the row."""
    cells = []
    for i, p in enumerate(records):
        state = p.state if p else "not_started"  # one of three fixed names
        count = ""
        if p and p.attempts:
            n = int(p.attempts)
            words = labels["one_submission"] if n == 1 else labels["submissions"].replace("{n}", str(n))
            count = f' <span class="muted submission-count">{words}</span>'
        late = ""
        if p and deadlines and p.late(deadlines[i]):
            late = (
                f' <span class="badge badge-attempted badge-late" data-testid="late" '
                f'title="{labels["late_title"]}">{labels["late"]}</span>'
            )
        label = f' data-label="{titles[i]}"' if titles else ""
        cells.append(f'<td{label}><span class="badge badge-{state}">{labels[state]}</span>{late}{count}</td>')
    return Markup("".join(cells))


def _mistakes(db, course_id: int, lang: str) -> list[dict]:
    return [
        {
            **m,
            "message": findings.message(m, lang),
            "label": findings.label(m["finding_id"], lang, findings.message(m, lang)),
            "lesson_title": lesson_title(m["lesson"], lang),
            "is_error": findings.is_error(m["finding_id"]),
            "example_url": url_for(
                "dashboard.example", course_id=course_id, sid=m["submission_id"], line=m["line"] or None
            ),
        }
        for m in classroom.mistakes(db, course_id)
    ]


@bp.get("/courses/<int:course_id>")
@instructor_required
def course(course_id):
    db, course = _taught_course(course_id)
    lang = current_lang()
    lessons = classroom.lessons(db, course_id)
    lesson_ids = [item["lesson"] for item in lessons]
    learners = classroom.learners(db, course_id)
    table = classroom.progress(db, course_id)
    granted = deadlines.extensions(db, course_id)
    own = {u["learner"]: deadlines.deadline_of(lessons, granted, u["id"]) for u in learners}
    stats = classroom.lesson_stats(lesson_ids, [u["learner"] for u in learners], table, own_deadlines=own)
    mistakes = _mistakes(db, course_id, lang)
    titles = {lesson: lesson_title(lesson, lang) for lesson in lesson_ids}
    labels = cell_labels()
    cell_titles = [str(escape(titles[lesson])) for lesson in lesson_ids]
    matrix = [
        (
            u["username"],
            f"/teach/courses/{course_id}/learners/{u['id']}",
            progress_cells(
                [table.get((u["learner"], lesson)) for lesson in lesson_ids], labels, own[u["learner"]], cell_titles
            ),
        )
        for u in learners
    ]
    policy = deadlines.policy(db, course_id)
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
        tutor_counts=tutor_policy.questions_per_lesson(db, course_id)
        if tutor_policy.enabled(current_app.config)
        else None,
        extended=len(granted),
        policy=policy,
        policy_words=policy_words(policy),
        notices=get_flashed_messages(with_categories=True),
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
    rows = own_rows(db, course_id, person, lessons, table, lang)
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
                    "label": findings.label(f["finding_id"], lang),
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
        "dashboard/learner.html",
        course=course,
        person=person,
        rows=rows,
        policy_words=policy_words(deadlines.policy(db, course_id)),
        submissions=shown,
        pages=pages,
        notices=get_flashed_messages(with_categories=True),
    )


def own_rows(db, course_id: int, person, lessons: list, table: dict, lang: str) -> list[dict]:
    """A learner's row per lesson: progress, their own deadline (an extension's, with its note, where granted),
    late or not against it, and the score that counts under the course's late policy, the learner's and the
    LMS's number (webapp/deadlines.py counted_scores): a verdict an exam holds back is marked, not counted."""
    counted = deadlines.counted_scores(db, course_id, [person], lessons)
    rows = []
    for item in lessons:
        mine = counted[(person["learner"], item["lesson"])]
        p = table.get((person["learner"], item["lesson"])) or classroom.Progress()
        rows.append(
            {
                "lesson": item["lesson"],
                "title": lesson_title(item["lesson"], lang),
                "deadline": mine.deadline,
                "course_deadline": item["deadline"],
                "extension": mine.extension,
                "iso_deadline": iso_day(mine.deadline),
                "progress": p,
                "late": p.late(mine.deadline),
                "counted": mine.score,
                "held_until": mine.held_until,
            }
        )
    return rows


def policy_words(policy: late_policy.LatePolicy) -> str:
    key, values = policy.words()
    return gettext(key, **values)


@bp.get("/courses/<int:course_id>/submissions/<sid>")
@instructor_required
def example(course_id, sid):
    """One submission of a course's learner, as the class's mistakes cite it: whose and when, its findings,
    and its code with the cited line (?line=) marked; the way back is the course's dashboard."""
    db, course = _taught_course(course_id)
    row = db.execute(
        "SELECT s.id, s.learner, s.lesson, s.code, s.status, s.result_status, s.score, s.error, s.created_at, "
        "s.attempt, u.id AS user_id, u.username FROM submissions s JOIN users u ON u.learner = s.learner "
        "JOIN enrollments e ON e.user_id = u.id AND e.course_id = ? "
        "JOIN course_lessons cl ON cl.course_id = e.course_id AND cl.lesson = s.lesson WHERE s.id = ?",
        (course_id, sid),
    ).fetchone()
    if row is None:
        abort(404)  # not a submission of this course's learners on its lessons
    lang = current_lang()
    line = request.args.get("line", "")
    line = int(line) if line.isascii() and line.isdigit() and len(line) < 7 else None
    found = [
        {
            "finding_id": f["finding_id"],
            "label": findings.label(f["finding_id"], lang),
            "line": f["line"],
            "message": bounds.marker(findings.message(f, lang) or "", 500),
            "cited": line is not None and f["line"] == line,
        }
        for f in findings.of_submissions(db, [sid]).get(sid, [])[:20]
    ]
    return render_template(
        "dashboard/example.html",
        course=course,
        row=row,
        title=lesson_title(row["lesson"], lang),
        line=line,
        findings=found,
        code_html=marked_code(
            row["code"], line, gettext("The rest of the code ({n} lines) is shown without highlighting.")
        ),
    )


def marked_code(code: str, line: int | None, note: str) -> Markup:
    """The code as a submission's own page shows it (webapp/code_views.py: highlighted up to HIGHLIGHT_CHARS,
    then plain), with `line` marked (Pygments' `hll`, and a data attribute a test or a script can find)."""
    head = code_views._head(code, code_views.HIGHLIGHT_CHARS, len(code))
    marked = [line] if line and line <= len(head.splitlines()) else []
    html = highlight(
        head,
        get_lexer_by_name("python"),
        HtmlFormatter(linenos="inline", cssclass="highlight code-view", hl_lines=marked),
    )
    if marked:
        html = html.replace('<span class="hll">', '<span class="hll" data-testid="cited-line">', 1)
    rest = code[len(head) :]
    if not rest:
        return Markup(html)
    return Markup(html) + Markup(
        '<p class="muted code-truncated" data-testid="code-truncated">{}</p><pre class="code-plain">{}</pre>'
    ).format(note.format(n=len(rest.splitlines())), rest)


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
    """The gradebook (webapp/gradebook.py): ?style= comma or semicolon (the page's language picks by default),
    ?headers=localized for a header in the page's language, ?bom=1 for Excel."""
    db, course = _taught_course(course_id)
    lessons = classroom.lessons(db, course_id)
    style = grades.style_for(request.args.get("style"), current_lang())
    localized = request.args.get("headers") == "localized"
    out = io.StringIO()
    if request.args.get("bom") == "1":
        out.write(grades.BOM)
    writer = csv.writer(out, delimiter=grades.STYLES[style][0])
    writer.writerow(grades.header([item["lesson"] for item in lessons], gettext if localized else None))
    yes_no = (gettext("yes"), gettext("no")) if localized else ("yes", "no")
    learners = classroom.learners(db, course_id)
    writer.writerows(grades.rows(db, course_id, lessons, learners, classroom.progress(db, course_id), style, yes_no))
    filename = f"gradebook-course-{course_id}.csv"
    return Response(
        out.getvalue(),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


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

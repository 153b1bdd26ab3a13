"""The instructor's pages on similar submissions (webapp/similarity.py): per course lesson, a report computed in
the background on the learners' best submissions, its pairs ranked, and a pair's two codes side by side with the
lines they share marked. Worded as what it is: a pointer for a person to look, never a finding or a penalty."""

from __future__ import annotations

import json
import time

from flask import Blueprint, abort, current_app, flash, get_flashed_messages, redirect, render_template, url_for
from markupsafe import Markup, escape

from webapp import classroom, content, similarity
from webapp.auth import gettext, instructor_required
from webapp.courses import lesson_title
from webapp.dashboard import _taught_course
from webapp.lessons import current_lang

bp = Blueprint("similarity_pages", __name__, url_prefix="/teach")
MAX_LEARNERS = 500  # a report's payload holds each learner's best submission (at most 64 KiB each)


def best_submissions(db, course_id: int, lesson: str) -> dict[str, dict]:
    """Each course learner's best graded submission of the lesson (highest score, then the latest): sid -> row."""
    rows = db.execute(
        "SELECT s.id, s.learner, s.code, s.score, s.created_at, u.id AS user_id, u.username FROM enrollments e "
        "JOIN users u ON u.id = e.user_id JOIN submissions s ON s.learner = u.learner AND s.lesson = ? "
        "WHERE e.course_id = ? AND s.score IS NOT NULL",
        (lesson, course_id),
    ).fetchall()
    best: dict[str, object] = {}
    for r in rows:
        mine = best.get(r["learner"])
        if mine is None or (r["score"], r["created_at"]) > (mine["score"], mine["created_at"]):
            best[r["learner"]] = r
    return {r["id"]: dict(r) for r in best.values()}


def _starter(lesson: str) -> str:
    ex = content.exercises().get(lesson)
    return ex.starter_in("en") if ex else ""


def _collect(db, report) -> dict | None:
    """A pending report's result, copied from the queue's storage into the database once it is there."""
    if report is None or report["finished_at"] is not None:
        return report
    queue = current_app.extensions["amp_dojo_queue"]
    job = f"course-{report['course_id']}-{report['id']}"
    done = queue.peek("similarity", job, 0)
    if not isinstance(done, dict):
        return report
    db.execute(
        "UPDATE similarity_reports SET finished_at = ?, seconds = ?, pairs = ? WHERE id = ?",
        (time.time(), done.get("seconds"), json.dumps(done.get("pairs", [])), report["id"]),
    )
    queue.huey.delete(f"amp-dojo:similarity:{job}:0")
    return db.execute("SELECT * FROM similarity_reports WHERE id = ?", (report["id"],)).fetchone()


def latest(db, course_id: int, lesson: str):
    report = db.execute(
        "SELECT * FROM similarity_reports WHERE course_id = ? AND lesson = ? ORDER BY id DESC LIMIT 1",
        (course_id, lesson),
    ).fetchone()
    return _collect(db, report)


@bp.get("/courses/<int:course_id>/similarity")
@instructor_required
def overview(course_id):
    db, course = _taught_course(course_id)
    lang = current_lang()
    lessons = []
    for item in classroom.lessons(db, course_id):
        report = latest(db, course_id, item["lesson"])
        pairs = json.loads(report["pairs"]) if report is not None and report["pairs"] else []
        best = best_submissions(db, course_id, item["lesson"]) if pairs else {}
        lessons.append(
            {
                "lesson": item["lesson"],
                "title": lesson_title(item["lesson"], lang),
                "report": report,
                "pairs": [
                    {
                        "a": best.get(a, {}).get("username", "?"),
                        "b": best.get(b, {}).get("username", "?"),
                        "score": score,
                        "of_a": of_a,
                        "of_b": of_b,
                        "url": url_for("similarity_pages.pair", course_id=course_id, lesson=item["lesson"], a=a, b=b),
                    }
                    for a, b, score, _shared, of_a, of_b in pairs[:20]
                    if a in best and b in best  # a learner who left, or a newer best since: not shown
                ],
            }
        )
    pending = any(x["report"] is not None and x["report"]["finished_at"] is None for x in lessons)
    return render_template(
        "dashboard/similarity.html",
        course=course,
        lessons=lessons,
        pending=pending,
        notices=get_flashed_messages(with_categories=True),
    )


@bp.post("/courses/<int:course_id>/similarity/<lesson>")
@instructor_required
def compute(course_id, lesson):
    """Queues a report on the lesson's best submissions, below every learner's grading."""
    db, _course = _taught_course(course_id)
    if lesson not in {item["lesson"] for item in classroom.lessons(db, course_id)}:
        abort(404)
    best = best_submissions(db, course_id, lesson)
    if len(best) > MAX_LEARNERS:
        flash(gettext("A report compares at most {n} learners.", n=MAX_LEARNERS), "error")
        return redirect(url_for("similarity_pages.overview", course_id=course_id), code=303)
    db.execute(
        "INSERT INTO similarity_reports (course_id, lesson, requested_at, submissions) VALUES (?, ?, ?, ?)",
        (course_id, lesson, time.time(), len(best)),
    )
    report_id = db.execute(
        "SELECT max(id) FROM similarity_reports WHERE course_id = ? AND lesson = ?", (course_id, lesson)
    ).scalar()
    payload = {
        "job": f"course-{course_id}-{report_id}",
        "codes": {sid: row["code"] for sid, row in best.items()},
        "starter": _starter(lesson),
    }
    current_app.extensions["amp_dojo_queue"].similarity(payload)
    flash(gettext("The comparison is queued: this page shows it when it is done."), "saved")
    return redirect(url_for("similarity_pages.overview", course_id=course_id), code=303)


def marked(code: str, lines: set[int]) -> Markup:
    """The code, escaped, one line per span; the lines the other submission shares are marked."""
    out = []
    for n, text in enumerate(code.splitlines(), 1):
        mark = ' class="overlap" data-testid="overlap"' if n in lines else ""
        out.append(f'<span{mark}><span class="muted">{n:>3}</span> {escape(text) or " "}</span>')
    return Markup("\n".join(out))


@bp.get("/courses/<int:course_id>/similarity/<lesson>/<a>/<b>")
@instructor_required
def pair(course_id, lesson, a, b):
    db, course = _taught_course(course_id)
    best = best_submissions(db, course_id, lesson)
    if a not in best or b not in best or a == b:
        abort(404)  # only the best submissions of this course's learners on this lesson
    starter = _starter(lesson)
    left, right = best[a], best[b]
    return render_template(
        "dashboard/similarity_pair.html",
        course=course,
        title=lesson_title(lesson, current_lang()),
        left=left,
        right=right,
        left_html=marked(left["code"], similarity.overlapping_lines(left["code"], right["code"], starter)),
        right_html=marked(right["code"], similarity.overlapping_lines(right["code"], left["code"], starter)),
    )

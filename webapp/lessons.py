"""The HTML pages: lesson list, lesson (text, editor, results), a submission's
permalink, and the language switch. Page data for the scripts travels in
<script type="application/json"> blocks, never in inline scripts."""

from __future__ import annotations

from urllib.parse import urlparse

from flask import Blueprint, Response, abort, current_app, make_response, redirect, render_template, request

from grader.errors import ExerciseNotFound
from grader.lesson.base import LANGUAGES, localize
from webapp import code_views, content, exams, i18n, store, workers
from webapp.collector import collect
from webapp.db import get_db
from webapp.security import learner_id, readable_submission

bp = Blueprint("lessons", __name__)
LANG_NAMES = {"en": "English", "it": "Italiano", "id": "Bahasa Indonesia"}
PROGRESS_LABELS = {"not_started": "Not started", "attempted": "Attempted", "passed": "Passed"}


def current_lang() -> str:
    return content.language(request.cookies.get("lang"))


@bp.app_context_processor
def _globals():
    lang = current_lang()

    def _(text: str, **values) -> str:
        return i18n.gettext(text, lang, **values)

    labels = {k: _(v) for k, v in PROGRESS_LABELS.items()}
    return {"lang": lang, "languages": LANG_NAMES, "progress_labels": labels, "_": _, "ui_catalog": i18n.catalog(lang)}


@bp.get("/")
def index():
    db = get_db()
    learner = learner_id()
    collect(
        db,
        current_app.extensions["amp_dojo_queue"],
        current_app.config,
        [
            r["id"]
            for r in db.execute(
                "SELECT id FROM submissions WHERE learner = ? AND status IN ('queued', 'running')", (learner,)
            )
        ],
    )
    progress = store.progress(db, learner)
    lang = current_lang()
    cards = [content.card(ex, lang, progress.get(ex.id, "not_started")) for ex in content.exercises().values()]
    return render_template("lessons/index.html", cards=cards)


@bp.get("/lessons/<lesson_id>")
def lesson(lesson_id):
    try:
        ex = content.exercise(lesson_id)
    except ExerciseNotFound:
        abort(404)
    lang = current_lang()
    db = get_db()
    history = store.history(db, learner_id(), lesson_id)
    window = exams.holding(db, learner_id()).get(lesson_id)
    if window is not None:  # an exam holds back the verdicts of the submissions made since it opened
        history = [exams.mask(h, window[1]) if h["created_at"] >= window[0] else h for h in history]
    page = {
        "lesson": {
            "id": ex.id,
            "title": localize(ex.title, lang),
            "starter": ex.starter_in(lang),
            "baseline": ex.baseline,
        },
        "history": history,
        "check_titles": content.check_titles(ex, lang),
        "urls": {
            "submit": f"/api/lessons/{ex.id}/submissions",
            "history": f"/api/lessons/{ex.id}/submissions",
            "quiz": f"/api/quiz/{ex.id}/",
        },
    }
    exam = exams.exam_in_force(db, learner_id(), lesson_id)
    return render_template(
        "lessons/lesson.html",
        lesson=exams.without_help(content.public_lesson(ex, lang), exam),
        exam=exam,
        page=page,
        tutor=_tutor(db, ex.id),
        history=history,
        markdown_inline=content.markdown_inline,
    )


def _tutor(db, lesson_id: str) -> dict | None:
    """The tutor's form, where this learner may ask about this lesson (webapp/tutor/policy.py); else None."""
    from flask_login import current_user

    from webapp.tutor import policy

    allowed, _why = policy.allowed_here(db, current_user, lesson_id)
    return {"max_chars": int(current_app.config["TUTOR_MAX_QUESTION_CHARS"])} if allowed else None


@bp.get("/submissions/<sid>")
def submission(sid):
    db = get_db()
    row = readable_submission(db, sid)
    if row is None:
        abort(404)
    collect(db, current_app.extensions["amp_dojo_queue"], current_app.config, [sid])
    row = store.get(db, sid)
    try:
        ex = content.exercise(row["lesson"])
        title = localize(ex.title, current_lang())
    except ExerciseNotFound:
        ex, title = None, row["lesson"]
    waiting = workers.notice(current_app.extensions["amp_dojo_queue"], current_app.config, row, current_lang())
    held = exams.held(db, row) if row["learner"] == learner_id() else None
    shown = {**store.detail(db, row, lang=current_lang()), **waiting}
    page = {
        "submission": exams.mask(shown, held) if held else shown,
        "check_titles": content.check_titles(ex, current_lang()) if ex else {},
    }
    return render_template(
        "submissions/show.html",
        row=row,
        title=title,
        page=page,
        no_grader_notice=waiting["no_grader_notice"],
        held=held,
        code_html=code_views.full(
            row["code"], i18n.gettext("The rest of the code ({n} lines) is shown without highlighting.", current_lang())
        ),
    )


@bp.after_request
def _no_store(response):
    """Pages carry the session's CSRF token, and lesson pages the learner's submissions: never cached."""
    response.headers["Cache-Control"] = "no-store"
    return response


def _safe_next(target: str | None) -> str:
    """Only paths on this site: never an open redirect."""
    if (
        not target
        or not target.startswith("/")
        or target.startswith("//")
        or urlparse(target).netloc
        or any(ord(c) < 32 or ord(c) == 127 for c in target)
    ):  # a newline would split the header
        return "/"
    return target


@bp.post("/lang")
def set_language():
    """A form POST with the session's CSRF token: another site cannot switch a learner's language."""
    code = request.form.get("lang", "")
    if code not in LANGUAGES:
        abort(400)
    response = make_response(redirect(_safe_next(request.form.get("next")), code=303))
    response.set_cookie("lang", code, max_age=365 * 24 * 3600, samesite="Lax", httponly=True)
    return response


@bp.get("/pygments.css")
def pygments_css():
    response = Response(content.pygments_css(), mimetype="text/css")
    response.cache_control.max_age = 3600
    return response

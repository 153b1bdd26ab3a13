"""The JSON API (docs/api.md): lessons, submissions, their live progress over
Server-Sent Events, and quiz feedback."""

from __future__ import annotations

import json
import logging
import time

from flask import Blueprint, Response, current_app, g, jsonify, request
from werkzeug.exceptions import HTTPException

from grader.errors import ExerciseNotFound
from webapp import content, exams, i18n, metrics, store, workers
from webapp.auth import signin_required
from webapp.collector import collect
from webapp.db import connect, get_db
from webapp.dispatch import dispatch, take_back
from webapp.logs import note
from webapp.security import client_ip, csrf_token, learner_id, readable_submission
from webapp.streams import StreamSlots

bp = Blueprint("api", __name__, url_prefix="/api")
log = logging.getLogger("amp_dojo.api")
POLL_S = 0.2
KEEPALIVE_S = 15.0


def _queue():
    return current_app.extensions["amp_dojo_queue"]


def error(status: int, message: str, **headers):
    response = jsonify(error=message)
    response.status_code = status
    response.headers.update(headers)
    return response


@bp.errorhandler(ExerciseNotFound)
def _no_lesson(exc):
    return error(404, exc.message)


@bp.errorhandler(HTTPException)
def _http_error(exc):
    return error(exc.code or 500, exc.description or exc.name)


@bp.after_request
def _no_store(response):
    """API answers carry learners' code, results and the CSRF token: no cache may keep them."""
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.errorhandler(store.Refused)
def _refused(exc):
    """Worded in the learner's language (the page's, or ?lang=), with its true reason."""
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else {}
    if request.endpoint == "api.submit":
        metrics.refused(exc.status, exc.message)
    return error(exc.status, i18n.gettext(exc.message, _lang(), **exc.values), **headers)


def event_id(text: str) -> int:
    """An event id from the client: ASCII digits only ('²' is a digit to str.isdigit), anything else is a 400.
    A huge one is clamped without int() (which refuses over 4300 digits): SQLite integers stop at 2**63."""
    if not text:
        return 0
    if not (text.isascii() and text.isdigit()):
        raise store.Refused(400, "an event id is a non-negative integer")
    return int(text) if len(text) <= 18 else 2**62


def _json_object() -> dict:
    """The request's JSON body, which must be an object. Malformed, non-object or absurdly nested bodies are
    the client's error (a RecursionError escapes get_json(silent=True))."""
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        body = None
    if not isinstance(body, dict):
        raise store.Refused(400, "send a JSON object")
    return body


def _lang() -> str:
    """?lang=, else the page's lang cookie; a request with an access token has no page: its Accept-Language."""
    if g.get("bearer"):
        return content.language(request.args.get("lang") or request.accept_languages.best_match(content.LANGUAGES))
    return content.language(request.args.get("lang") or request.cookies.get("lang"))


@bp.get("/openapi.json")
def openapi():
    from webapp.openapi import document

    return jsonify(document())


@bp.get("/session")
def session_info():
    """For API clients: starts the anonymous session and hands out its CSRF token."""
    learner_id()
    return jsonify(csrf_token=csrf_token(), csrf_header="X-CSRF-Token")


@bp.get("/me")
@signin_required
def me():
    """Whose this request is: `grader login` checks its token with it."""
    from flask_login import current_user

    return jsonify(username=current_user.username, role=current_user.role, token=bool(g.get("bearer")))


@bp.get("/lessons")
def lessons():
    progress = store.progress(get_db(), learner_id())
    lang = _lang()
    return jsonify(
        lessons=[content.card(ex, lang, progress.get(ex.id, "not_started")) for ex in content.exercises().values()]
    )


@bp.get("/lessons/<lesson_id>")
def lesson(lesson_id):
    exam = exams.exam_in_force(get_db(), learner_id(), lesson_id)
    data = exams.without_help(content.public_lesson(content.exercise(lesson_id), _lang()), exam)
    data["progress"] = store.progress(get_db(), learner_id()).get(lesson_id, "not_started")
    return jsonify(data)


def _code_from_request() -> str:
    body = _json_object()
    if not isinstance(body.get("code"), str):
        raise store.Refused(400, 'send JSON like {"code": "..."}')
    code = body["code"]
    limit = int(current_app.config["MAX_CODE_BYTES"])
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate ("\ud800") is valid JSON but not text
        raise store.Refused(400, "the code is not valid Unicode text") from None
    if "\x00" in code:  # Python refuses it too; PostgreSQL cannot store it
        raise store.Refused(400, "the code contains a NUL character")
    if size > limit:
        raise store.Refused(413, f"the code is larger than {limit} bytes")
    return code


@bp.post("/lessons/<lesson_id>/submissions")
def submit(lesson_id):
    content.exercise(lesson_id)
    from webapp.sandboxing import sandbox_problem

    problem = sandbox_problem(current_app.config)
    if problem:
        log.error("refusing to grade: %s", problem)
        metrics.refused(503, problem)
        return error(503, "grading is switched off on this server: " + problem)
    code = _code_from_request()
    db = get_db()
    row = store.create(
        db,
        learner=learner_id(),
        client_ip=client_ip(),
        lesson=lesson_id,
        code=code,
        lang=_lang(),
        config=current_app.config,
    )
    note(submission_id=row["id"])  # this request's later log lines name it
    dispatch(db, _queue(), current_app.config, row["learner"])  # or later, once the learner's previous one ends
    row = store.get(db, row["id"])
    body = {
        "id": row["id"],
        "status": row["status"],
        "position": store.position(db, row),
        "urls": store.urls(row["id"]),
        **workers.notice(_queue(), current_app.config, row, _lang()),
    }
    response = jsonify(body)
    response.status_code = 202
    response.headers["Location"] = body["urls"]["self"]
    return response


def _own_submission(sid: str, readable: bool = True):
    """The submission, for its learner (and, `readable`, for the instructors of its course); else a 404.
    An access token reads its own account's submissions only, whatever the account teaches."""
    db = get_db()
    readable = readable and not g.get("bearer")
    row = readable_submission(db, sid) if readable else store.get(db, sid, learner=learner_id())
    if row is None:
        raise store.Refused(404, "no such submission")
    return row


@bp.get("/submissions/<sid>")
def submission(sid):
    _own_submission(sid)
    db = get_db()
    collect(db, _queue(), current_app.config, [sid])
    after = event_id(request.args.get("after", ""))
    row = store.get(db, sid)
    data = {**store.detail(db, row, after, _lang()), **workers.notice(_queue(), current_app.config, row, _lang())}
    return jsonify(_as_seen(db, row, data))


def _as_seen(db, row, data: dict) -> dict:
    """The submission as this reader may see it: its learner's verdict held back while an exam says so."""
    until = exams.held(db, row) if row["learner"] == learner_id() else None
    return exams.mask(data, until) if until else data


@bp.post("/submissions/<sid>/cancel")
def cancel(sid):
    """Stops a queued or running grading of the learner's own submission; 409 once it has a verdict."""
    row = _own_submission(sid, readable=False)  # an instructor may read a learner's grading, not stop it
    db = get_db()
    if not store.cancel(db, row):
        raise store.Refused(409, "this submission has already finished")
    try:
        _queue().put("cancel", sid, row["attempt"], {"at": time.time()})
        take_back(db, _queue(), sid, row["attempt"])  # a task still waiting leaves the queue now
    except Exception:  # the record says cancelled; a worker that never hears of it finishes and is ignored, and
        # the collector takes the task back later (until then it holds the learner's place in the queue)
        log.exception("could not tell the grading queue that submission %s was cancelled", sid)
    dispatch(db, _queue(), current_app.config, row["learner"])
    return jsonify(store.summary(store.get(db, sid)))


@bp.get("/lessons/<lesson_id>/submissions")
def lesson_submissions(lesson_id):
    content.exercise(lesson_id)
    db = get_db()
    rows = store.history(db, learner_id(), lesson_id)
    return jsonify(submissions=[_as_seen(db, {**r, "learner": learner_id()}, r) for r in rows])


@bp.post("/quiz/<lesson_id>/<int:index>")
def quiz(lesson_id, index):
    ex = content.exercise(lesson_id)
    body = _json_object()
    choice, attempt = body.get("choice"), body.get("attempt", 1)
    if index >= len(ex.quiz) or not isinstance(choice, int) or not 0 <= choice < len(ex.quiz[index].choices):
        raise store.Refused(400, 'send JSON like {"choice": 0} for an existing question and choice')
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise store.Refused(400, "attempt counts this question's answers from 1")
    said = content.quiz_answer(ex, index, choice, _lang(), attempt)
    if exams.exam_in_force(get_db(), learner_id(), lesson_id):  # right or wrong, but no explanation
        said.update(answer=None, explanation="", explanation_html="")
    return jsonify(said)


@bp.get("/submissions/<sid>/stream")
def stream(sid):
    _own_submission(sid)
    last = request.headers.get("Last-Event-ID", "") or request.args.get("last_event_id", "")
    after = event_id(last)
    app = current_app._get_current_object()
    slots = StreamSlots(app.config["DATABASE"], app.config["STREAM_SECONDS"])
    slot = slots.take(
        get_db(),
        learner_id(),
        client_ip(),
        int(app.config["MAX_STREAMS"]),
        int(app.config["MAX_STREAMS_PER_LEARNER"]),
        int(app.config["MAX_STREAMS_PER_IP"]),
    )
    if slot is None:
        return error(
            429, "too many live result streams are open: poll GET /api/submissions/<id> instead", **{"Retry-After": "5"}
        )
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    row = store.get(get_db(), sid)
    until = exams.held(get_db(), row) if row["learner"] == learner_id() else None
    return Response(
        Released(_events(app, sid, after, _lang(), until), lambda: slots.give_back(slot)),
        mimetype="text/event-stream",
        headers=headers,
    )


class Released:
    """Frees the stream's slot however it ends (done, deadline, the client going away), even if
    it never started: the WSGI server always calls close(), a generator's finally may never run."""

    def __init__(self, events, release):
        self.events, self._release = events, release

    def __iter__(self):
        return self.events

    def close(self):
        try:
            self.events.close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


def sse(event: str, data: dict, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _done_data(row, data: dict, lang: str) -> dict:
    return {
        **data,
        "status": row["status"],
        "result_status": row["result_status"],
        "score": row["score"],
        "error": row["error"],
        "cancelled": store.summary(row)["cancelled"],
        "result": store.result_of(row, lang),
    }


def _events(app, sid: str, after: int, lang: str, held_until: float | None = None):
    """Sends stored events past `after`, then new ones as the collector brings
    them; a `queued` event (no id) whenever the queue position changes; ends
    after `done`, at STREAM_SECONDS, or when the submission has brought nothing
    new for STREAM_IDLE_SECONDS (the page then polls: a grading that stopped
    making progress does not hold a server thread). Its own connection: the
    request context is gone by now."""
    db = connect(app.config["DATABASE"])
    queue = app.extensions["amp_dojo_queue"]
    deadline = time.monotonic() + float(app.config["STREAM_SECONDS"])
    idle_s = float(app.config["STREAM_IDLE_SECONDS"])
    last_position, last_sent = None, time.monotonic()
    last_news = last_sent
    last_waiting = None
    try:
        yield "retry: 2000\n\n"
        while True:
            collect(db, queue, app.config, [sid])
            for event in store.events(db, sid, after):
                after = event["id"]
                if event["type"] == "done":
                    done = _done_data(store.get(db, sid), event["data"], lang)
                    yield sse("done", exams.mask(done, held_until) if held_until else done, after)
                    return
                if held_until and event["type"] == "check":  # an exam holds the verdict back: no check's either
                    continue
                yield sse(event["type"], event["data"], after)
                last_sent = last_news = time.monotonic()
            row = store.get(db, sid)
            if row["status"] in ("done", "error"):  # finished without a done event (older records)
                done = _done_data(row, {}, lang)
                yield sse("done", exams.mask(done, held_until) if held_until else done)
                return
            position = store.position(db, row)
            waiting = workers.no_grader(queue, app.config, row)
            if position is not None and (position, waiting) != (last_position, last_waiting):
                yield sse("queued", {"position": position, "no_grader_running": waiting})
                last_position, last_waiting, last_sent = position, waiting, time.monotonic()
                last_news = last_sent
            if time.monotonic() > deadline or time.monotonic() - last_news > idle_s:
                return
            if time.monotonic() - last_sent > KEEPALIVE_S:
                yield ": keep-alive\n\n"
                last_sent = time.monotonic()
            time.sleep(POLL_S)
    finally:
        db.close()

"""POST /api/submissions/<id>/tutor: a question about one's own graded submission, answered as server-sent
events (`delta` pieces of text, `replace` when the leak guard took the answer back, `error` when the model gave
none, then `done`). Every refusal before the stream starts is JSON with a status and words in the learner's
language. The blueprint is made by `make_blueprint(lesson_text, solutions)`: create_app hands it the two
functions of webapp.tutor_sources, so that this package never loads a lesson itself."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable

from flask import Blueprint, Response, current_app, g, jsonify, request
from flask_login import current_user

from grader.lesson.base import LANGUAGES
from webapp import i18n, store
from webapp.db import get_db
from webapp.i18n import noop_gettext
from webapp.security import learner_id, readable_submission
from webapp.tutor import client, policy, prompts
from webapp.tutor.leak_guard import GuardedStream, Secrets

NOT_GRADED = noop_gettext("Ask once this submission has a verdict.")
NO_QUESTION = noop_gettext("Write a question first.")
TOO_LONG = noop_gettext("Your question is too long: at most {n} characters.")
BUSY = noop_gettext("The tutor is answering other learners right now. Try again in a minute.")
NOTHING = noop_gettext("The tutor had no answer this time. Try asking in other words.")
NOT_FOUND = noop_gettext("There is no such submission of yours.")
GUARDED = noop_gettext("I can't give you the solution, but I can show you where to look.")
LOOK_AT = noop_gettext("Look at line {line}: {message}")
A_HINT = noop_gettext("A hint: {hint}")
QUESTION = noop_gettext("What do you think has to change there, and why?")

log = logging.getLogger("amp_dojo.tutor")
_busy: dict[int, threading.BoundedSemaphore] = {}
_busy_lock = threading.Lock()


def make_blueprint(lesson_text: Callable[[str, str], dict | None], solutions: Callable[[str], list[str]]) -> Blueprint:
    bp = Blueprint("tutor", __name__, url_prefix="/api")

    @bp.post("/submissions/<sid>/tutor")
    def ask(sid):
        config = current_app.config
        lang = _lang()
        if not policy.enabled(config):
            return _error(404, policy.OFF, lang)
        db = get_db()
        row = readable_submission(db, sid)
        if row is None or row["learner"] != learner_id():  # an instructor reads a learner's result, never asks
            return _error(404, NOT_FOUND, lang)
        body = request.get_json(silent=True)
        body = body if isinstance(body, dict) else {}
        question = str(body.get("question") or "").strip()
        longest = int(config["TUTOR_MAX_QUESTION_CHARS"])
        if not question:
            return _error(400, NO_QUESTION, lang)
        if len(question) > longest:
            return _error(400, TOO_LONG, lang, n=longest)
        ok, why = policy.allowed_here(db, current_user, row["lesson"])
        if not ok:
            return _error(403, why, lang)
        lesson = lesson_text(row["lesson"], lang)
        if row["status"] != "done" or not row["result"] or lesson is None:
            return _error(409, NOT_GRADED, lang)
        if refused := policy.over_quota(db, config, row["learner"], sid):
            return _error(429, refused[0], lang, **refused[1])
        gate = _gate(config)
        if not gate.acquire(blocking=False):
            return _error(503, BUSY, lang)
        try:
            asked = _asked(body, question, row, lang)
            store_text = bool(config.get("TUTOR_STORE_QUESTIONS"))
            qid = policy.record(db, row["learner"], row["lesson"], sid, question if store_text else None)
            left = _left(db, config, sid)
            secrets = Secrets.of(solutions(row["lesson"]), seen=_seen(lesson, row["code"]))
            messages = prompts.messages(lesson, asked, int(config["TUTOR_MAX_PROMPT_CHARS"]))
            answer = _Answer(client.endpoint_from(config), messages, secrets, _fallback(lesson, asked, lang), lang)
        except Exception:
            gate.release()
            raise
        after = (lambda text: policy.keep_answer(config["DATABASE"], qid, text)) if store_text else None
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return Response(answer.events(gate, left, after), mimetype="text/event-stream", headers=headers)

    return bp


class _Answer:
    def __init__(self, endpoint, messages, secrets, fallback: str, lang: str):
        self.endpoint, self.messages, self.secrets, self.fallback, self.lang = (
            endpoint,
            messages,
            secrets,
            fallback,
            lang,
        )

    def events(self, gate, left: int | None, after):
        """The stream; the gate is given back however it ends (a closed tab included)."""
        guarded = GuardedStream(self.secrets, max_chars=self.endpoint.max_tokens * 8)
        try:
            try:
                for piece in client.stream_chat(self.endpoint, self.messages):
                    if out := guarded.feed(piece):
                        yield _event("delta", {"text": out})
                    if guarded.leaked:
                        break
                if out := guarded.finish():
                    yield _event("delta", {"text": out})
                if guarded.leaked:
                    yield _event("replace", {"text": self.fallback})
                elif not guarded.shown.strip():
                    yield _event("error", {"message": i18n.gettext(NOTHING, self.lang)})
            except client.TutorUnavailable as exc:
                log.warning("tutor: no answer: %s", exc)
                yield _event("error", {"message": i18n.gettext(exc.message, self.lang)})
            yield _event("done", {"left": left})
        finally:
            gate.release()
            if after is not None:
                after(self.fallback if guarded.leaked else guarded.shown)


def _asked(body: dict, question: str, row, lang: str) -> prompts.Asked:
    history = []
    for turn in (body.get("history") or [])[-3:] if isinstance(body.get("history"), list) else []:
        if isinstance(turn, dict):
            history.append((str(turn.get("question") or "")[:600], str(turn.get("answer") or "")[:1200]))
    try:
        opened = max(0, min(int(body.get("hints_opened") or 0), 50))
    except (TypeError, ValueError):
        opened = 0
    return prompts.Asked(
        question=question,
        code=row["code"],
        result=store.result_of(row, lang),  # the findings worded in the page's language
        lang=lang,
        hints_opened=opened,
        history=history,
    )


def _seen(lesson: dict, code: str) -> list[str]:
    """What the learner can already see: repeating it is no leak."""
    return [lesson.get("starter") or "", lesson.get("lesson") or "", lesson.get("task") or "", *lesson["hints"], code]


def _fallback(lesson: dict, asked: prompts.Asked, lang: str) -> str:
    """The hint-level reply that replaces a leaking answer: the first finding with a line, the next hint not yet
    opened, and a guiding question; all of it already the learner's to see."""
    said = [i18n.gettext(GUARDED, lang)]
    finding = next(
        (
            f
            for c in (asked.result or {}).get("checks") or []
            if c.get("status") in ("fail", "error")
            for f in c.get("findings") or []
            if f.get("line")
        ),
        None,
    )
    if finding:
        said.append(i18n.gettext(LOOK_AT, lang, line=finding["line"], message=finding.get("message") or ""))
    hints = lesson.get("hints") or []
    if asked.hints_opened < len(hints):
        said.append(i18n.gettext(A_HINT, lang, hint=hints[asked.hints_opened]))
    said.append(i18n.gettext(QUESTION, lang))
    return "\n\n".join(said)


def _left(db, config, sid: str) -> int | None:
    most = int(config.get("TUTOR_QUESTIONS_PER_SUBMISSION") or 0)
    if not most:
        return None
    asked = db.execute("SELECT count(*) FROM tutor_questions WHERE submission_id = ?", (sid,)).scalar()
    return max(0, most - asked)


def _gate(config) -> threading.BoundedSemaphore:
    """Answers written at once by this process (each holds a server thread while the model writes)."""
    most = max(1, int(config.get("TUTOR_CONCURRENCY") or 1))
    with _busy_lock:
        return _busy.setdefault(id(config), threading.BoundedSemaphore(most))


def _event(kind: str, data: dict) -> str:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _lang() -> str:
    """?lang=, else the page's cookie; a request with an access token has no page: its Accept-Language."""
    wanted = request.args.get("lang")
    if not wanted:
        wanted = request.accept_languages.best_match(LANGUAGES) if g.get("bearer") else request.cookies.get("lang")
    return wanted if wanted in LANGUAGES else "en"


def _error(status: int, message: str, lang: str, **values):
    response = jsonify(error=i18n.gettext(message, lang, **values))
    response.status_code = status
    return response

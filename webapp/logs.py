"""What the app's processes log, and how (docs/configuration.md, LOG_LEVEL and LOG_FORMAT).

A normal start says only what an admin must read: the URL, and real warnings. What libraries say at INFO (Alembic's
migrations, Huey's consumer, waitress) shows at LOG_LEVEL=INFO or DEBUG, or with `--verbose`. LOG_FORMAT=json
writes one JSON object per line for log shippers, every line of the process, with what is known of the moment it
was said: the request (its id, echoed to the client in X-Request-Id), the learner, the submission, the lesson and
the duration. Those come from a context variable the request hooks (here) and the grading worker set, so no log
call needs to pass them."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import secrets
import sys
import time
from contextlib import contextmanager

FIELDS = ("request_id", "learner", "submission_id", "lesson", "attempt", "duration_ms")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REQUEST_ID_HEADER = "X-Request-Id"
# An id a proxy in front sent (nginx's $request_id) is kept when it looks like one; anything else is replaced.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_context: contextvars.ContextVar[dict | None] = contextvars.ContextVar("amp_dojo_log_context", default=None)
_json = {"on": False}
log = logging.getLogger("amp_dojo.requests")


def level_of(config, verbose: bool = False) -> int:
    """`--verbose` is DEBUG; else LOG_LEVEL (a name or a number), WARNING when unset."""
    if verbose:
        return logging.DEBUG
    value = config.get("LOG_LEVEL") or "WARNING"
    if isinstance(value, int):
        return value
    level = logging.getLevelName(str(value).upper())
    if not isinstance(level, int):
        raise ValueError(f"LOG_LEVEL {value!r}: use DEBUG, INFO, WARNING or ERROR")
    return level


def configure(config, verbose: bool = False) -> None:
    """The process's one handler, on stderr, for every logger (Python's warnings included)."""
    fmt = str(config.get("LOG_FORMAT") or "text").lower()
    if fmt not in ("text", "json"):
        raise ValueError(f"LOG_FORMAT {fmt!r}: use text or json")
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level_of(config, verbose))
    logging.captureWarnings(True)
    _json["on"] = fmt == "json"


def announce(message: str, logger: str = "amp_dojo") -> None:
    """What a start always says, whatever the level (the URL): a plain line, or a JSON object like every other."""
    if _json["on"]:
        record = logging.LogRecord(logger, logging.INFO, __file__, 0, message, None, None)
        ContextFilter().filter(record)
        print(JsonFormatter().format(record), file=sys.stderr, flush=True)
    else:
        print(message, file=sys.stderr, flush=True)


class ContextFilter(logging.Filter):
    """Copies what the context knows onto each record (a value the call passed in `extra` wins)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in (_context.get() or {}).items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                document[name] = value
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return json.dumps(document, default=str)


@contextmanager
def context(**fields):
    """Adds fields to every line logged inside the block (in this thread)."""
    token = _context.set({**(_context.get() or {}), **{k: v for k, v in fields.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)


def note(**fields) -> None:
    """Adds fields to the rest of this request's lines (a submission id once it is known)."""
    _context.set({**(_context.get() or {}), **{k: v for k, v in fields.items() if v is not None}})


# ---------- per request ----------


def _begin_request() -> None:
    from flask import g, request

    sent = request.headers.get(REQUEST_ID_HEADER, "")
    g.request_id = sent if _REQUEST_ID.fullmatch(sent) else secrets.token_hex(8)
    g.request_started = time.perf_counter()
    view = request.view_args or {}
    _context.set({"request_id": g.request_id, "submission_id": view.get("sid"), "lesson": view.get("lesson_id")})


def _end_request(response):
    """The id echoed to the client; one line per request at INFO (an access log, with its duration)."""
    from flask import g, request, session

    request_id = g.get("request_id")
    if request_id is None:
        return response
    response.headers[REQUEST_ID_HEADER] = request_id
    user = g.get("_login_user")  # loaded by this request already, or never: the log loads nothing
    learner = getattr(user, "learner", None) or (session.get("learner") if session.accessed else None)
    duration = round((time.perf_counter() - g.request_started) * 1000, 1)
    log.info(
        "%s %s %s",
        request.method,
        request.path,
        response.status_code,
        extra={"learner": learner, "duration_ms": duration},
    )
    return response


def _forget_request(_exc=None) -> None:
    _context.set({})  # a server thread serves other requests next


def init_app(app) -> None:
    app.before_request(_begin_request)
    app.after_request(_end_request)
    app.teardown_request(_forget_request)

"""AMP Dojo's web app: lessons, an editor, and live grading results.

`create_app()` follows Flask's application-factory pattern; grading runs in
separate `amp-dojo worker` processes that share only the queue (webapp/queue.py)."""

from __future__ import annotations

import logging
import os
import threading

from flask import Flask

from webapp.i18n import noop_gettext

log = logging.getLogger("amp_dojo")


def load_settings(test_config: dict | None = None) -> Flask:
    """A bare app holding only the configuration: what a grading worker needs
    (no database, no session key), and the first half of create_app."""
    app = Flask(__name__, instance_relative_config=True)
    app.config.from_object("webapp.config")
    if test_config is None:
        if os.environ.get("AMP_DOJO_CONFIG"):
            app.config.from_pyfile(os.environ["AMP_DOJO_CONFIG"])
        app.config.from_prefixed_env("AMP_DOJO")
    else:
        app.config.from_mapping(test_config)
    instance = app.instance_path
    app.config["DATABASE"] = app.config["DATABASE"] or os.path.join(instance, "amp_dojo.sqlite3")
    app.config["QUEUE_URL"] = app.config["QUEUE_URL"] or f"sqlite:///{os.path.join(instance, 'queue.sqlite3')}"
    if os.path.isdir(instance):  # an older installation's (0755): the grader's alone, like what it holds
        from webapp.files import private_dir

        private_dir(instance)
    return app


def make_queue(config, *, grading: bool = False):
    """The queue; `grading` for a worker process: it then grades as many at once as the settings say, from a
    pool of warm sandboxes (the web app itself only enqueues)."""
    from webapp.queue import GradingQueue, WorkerSettings

    concurrency, pool = grading_capacity(config) if grading else (1, 0)
    return GradingQueue(
        config["QUEUE_URL"],
        WorkerSettings(
            allow_local=bool(config["ALLOW_LOCAL_SANDBOX"]),
            exercises=config["EXERCISES"],
            limits=tuple(dict(config["SANDBOX_LIMITS"]).items()),
            concurrency=concurrency,
            pool_size=pool,
        ),
    )


def grading_capacity(config) -> tuple[int, int]:
    """(gradings at once, warm sandboxes per device). Automatic: one grading per core on a CPU (each worker
    uses one thread), two per GPU (their correctness phases overlap; timing has the device alone), but one in
    all where the sandbox cannot cap a grading's CPU use (bwrap without a cpu cgroup); as many warm sandboxes
    as gradings run at once, so each next submission finds one ready."""
    concurrency = config.get("GRADING_CONCURRENCY")
    if not concurrency:
        from grader.runner import resolve_device
        from grader.sandboxes.kinds import unbounded_cpu

        if unbounded_cpu(config["SANDBOX"]):
            concurrency = 1
        else:
            concurrency = 2 if resolve_device(config["DEVICE"]).startswith("cuda") else (os.cpu_count() or 1)
    pool = config.get("POOL_SIZE")
    return int(concurrency), int(concurrency if pool is None else pool)


def create_app(test_config: dict | None = None) -> Flask:
    app = load_settings(test_config)
    from webapp import api, auth, courses, dashboard, db, health, lessons, logs, metrics, passwords, security

    # "/api/lessons//submissions" is a 404 like any unknown path, not a redirect as HTML (the fuzz test found it)
    app.url_map.merge_slashes = False
    app.url_map.converters["int"] = db.DatabaseIntConverter  # before any route: every <int:...> is bounded
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = security.secret_key(app.instance_path)
    # JSON escapes can make the body up to 6 times the code; the code itself is checked after parsing.
    if app.config.get("MAX_CONTENT_LENGTH") is None:
        app.config["MAX_CONTENT_LENGTH"] = 6 * int(app.config["MAX_CODE_BYTES"]) + 65536

    logs.init_app(app)  # first: the request id is known to every later hook, and echoed on every response
    db.init_app(app)  # a SQLite file (and a missing folder for it) is made private when first opened
    security.init_app(app)
    auth.init_app(app)
    with app.app_context():
        db.init_db(db.get_db())
    app.extensions["amp_dojo_queue"] = make_queue(app.config)
    app.register_blueprint(lessons.bp)
    app.register_blueprint(api.bp)
    for blueprint in (auth.bp, passwords.bp, courses.bp, dashboard.bp, health.bp, metrics.bp):
        app.register_blueprint(blueprint)
    from webapp import tutor_sources
    from webapp.tutor import routes as tutor_routes

    # the tutor is handed the lesson's public text and, for its leak guard, the solutions: it loads no lesson itself
    app.register_blueprint(tutor_routes.make_blueprint(tutor_sources.lesson_text, tutor_sources.solutions))
    from webapp import late_work, roster, similarity_pages  # an instructor's term: late work, roster, similarity

    for blueprint in (late_work.bp, roster.bp, similarity_pages.bp):
        app.register_blueprint(blueprint)
    # LTI 1.3 (an LMS's launches, grades and roster): its own package, which the core never imports
    from webapp import lti

    lti.init_app(app)
    from webapp import regrade_exam_pages

    app.register_blueprint(regrade_exam_pages.bp)
    app.before_request(lambda: start_collector(app))
    for status in ERROR_PAGES:  # the one handler of every HTML error page (the API words its own as JSON)
        app.register_error_handler(status, error_page)
    return app


# Each error an HTML page can end in, worded for every language (tests/webapp/test_i18n.py finds the strings):
# the status's title, what happened and what to do; the page links back to the lessons (and the courses).
ERROR_PAGES = {
    400: (
        noop_gettext("Bad request"),
        noop_gettext("The server could not understand this request. Go back and try again."),
    ),
    403: (noop_gettext("Not allowed"), noop_gettext("This page is not open to your account.")),
    404: (noop_gettext("Not found"), noop_gettext("There is nothing at this address.")),
    405: (noop_gettext("Not allowed"), noop_gettext("This address does not answer this kind of request.")),
    413: (noop_gettext("Too large"), noop_gettext("What you sent is larger than this server accepts.")),
    429: (noop_gettext("Too many requests"), noop_gettext("Wait a moment, then try again.")),
    500: (
        noop_gettext("Something went wrong"),
        noop_gettext("The server could not answer this request. Try again; if it happens again, tell your instructor."),
    ),
}


def error_page(exc):
    """An error as its reader expects it: JSON under /api/ (with Allow on a 405, Retry-After on a 429), elsewhere
    a page in the page's language with a way on. Routing errors come here before any blueprint is chosen; errors
    inside the API's own routes are answered by its blueprint's handlers first."""
    from flask import render_template, request
    from werkzeug.exceptions import HTTPException, InternalServerError

    from webapp import content, i18n

    if not isinstance(exc, HTTPException):  # an unhandled exception reaches the 500 handler as itself
        exc = InternalServerError(original_exception=exc)
    status = exc.code or 500
    if request.path.startswith("/api/"):
        from webapp.api import error

        return error(status, exc.description or exc.name, **_headers(exc))
    lang = content.language(request.cookies.get("lang"))  # the pages' language (webapp/lessons.py)
    title, message = ERROR_PAGES.get(status, ERROR_PAGES[500])
    try:
        page = render_template(
            "error.html", title=i18n.gettext(title, lang), message=i18n.gettext(message, lang), status=status
        )
    except Exception:  # the page itself failed (a broken database behind the header): plain words
        log.exception("the error page for %s could not be drawn", status)
        page = f"<!doctype html><title>{status}</title><p>{i18n.gettext(message, lang)}</p><p><a href='/'>AMP Dojo</a>"
    return page, status, _headers(exc)


def _headers(exc) -> dict:
    """What the status asks for (Werkzeug's own: the methods a 405 allows, when to come back after a 429)."""
    return {name: value for name, value in exc.get_headers() if name.lower() != "content-type"}


_collector_lock = threading.Lock()


def start_collector(app: Flask) -> None:
    """Starts the background collector on the first request of each process
    (not under TESTING, where tests collect explicitly)."""
    if app.testing or not float(app.config["COLLECT_INTERVAL"]) or "amp_dojo_collector" in app.extensions:
        return
    with _collector_lock:
        if "amp_dojo_collector" not in app.extensions:
            from webapp.collector import CollectorThread

            thread = CollectorThread(app)
            app.extensions["amp_dojo_collector"] = thread
            thread.start()

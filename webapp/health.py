"""Health for probes and people: `GET /healthz` (the process answers), `GET /readyz` (the database and the queue
answer and at least one grading worker is alive; else a 503 naming what is missing), and the instructors' page
of the grading workers and the queue (`/teach/workers`).

The probes take no session, no account and no CSRF token (webapp/auth.py lets them through when anonymous use is
off), set no cookie, and cost a query or two each: a load balancer may ask every second. They ask the queue for
its length and read the worker registry in the queue's storage (webapp/workers.py): no grading code is imported
here."""

from __future__ import annotations

import logging
import time

from flask import Blueprint, current_app, jsonify, render_template

from webapp import workers
from webapp.auth import instructor_required
from webapp.db import connect

bp = Blueprint("health", __name__)
log = logging.getLogger("amp_dojo.health")


def _no_store(response):
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/healthz")
def healthz():
    """The process is alive and answers requests; nothing else is asked (that is /readyz)."""
    return _no_store(jsonify(status="ok"))


def readiness(config, queue) -> dict:
    """What /readyz reports: each dependency's state and the names of those missing."""
    missing, alive = [], None
    try:
        with connect(config["DATABASE"]) as db:
            db.execute("SELECT 1").fetchone()
    except Exception:  # any failure means not reachable; the log says why
        log.warning("readiness: the database cannot be reached", exc_info=True)
        missing.append("database")
    try:
        queue.pending_count()
        alive = workers.alive(queue, config)  # the heartbeats live in the queue's storage
    except Exception:  # as above
        log.warning("readiness: the grading queue cannot be reached", exc_info=True)
        missing.append("queue")
    if alive == 0:  # a queue that cannot be read says nothing of the workers: the queue is what is named
        missing.append("worker")
    return {
        "ready": not missing,
        "missing": missing,
        "database": "database" not in missing,
        "queue": "queue" not in missing,
        "workers_alive": alive,
    }


@bp.get("/readyz")
def readyz():
    """200 when this app can take and grade submissions; 503 naming what is missing otherwise."""
    report = readiness(current_app.config, current_app.extensions["amp_dojo_queue"])
    response = jsonify(report)
    response.status_code = 200 if report["ready"] else 503
    return _no_store(response)


@bp.get("/teach/workers")
@instructor_required
def workers_page():
    """The grading workers (live ones first, then those that died in the last day) and the queue."""
    now = time.time()
    listed = workers.listing(current_app.extensions["amp_dojo_queue"], current_app.config)
    with connect(current_app.config["DATABASE"]) as db:
        depth, oldest = workers.waiting(db)
    page = render_template(
        "dashboard/workers.html",
        workers=listed,
        alive=sum(1 for w in listed if w["alive"]),
        depth=depth,
        oldest_s=None if oldest is None else max(0.0, now - oldest),
        dead_after=workers.dead_after(current_app.config),
    )
    return _no_store(current_app.make_response(page))

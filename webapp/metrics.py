"""Prometheus metrics at `/metrics` (prometheus_client), for an admin who wants queue depth, grading times and
failures without reading logs.

Counted where they happen, in the app process that sees them: gradings by lesson and status, and grading
seconds, when the collector stores a verdict (webapp/collector.py: exactly once per submission, whichever
process stores it); refusals by reason when the API declines a submission. Under several app processes
(PROMETHEUS_MULTIPROC_DIR set before start, prometheus_client's multiprocess mode) a scrape sums every
process's files; otherwise the default registry is served. What the database and the queue know (queue depth,
results stored; workers alive, from their heartbeats in the queue's storage) is read at scrape time
(StateGauges), so it is the same whichever process answers.

Every label set is bounded: a lesson label is a shipped lesson's id or "other", a status one of STATUSES,
a refusal reason one of REASONS. `/metrics` answers only what METRICS_ALLOW and METRICS_TOKEN let through
(docs/configuration.md); anyone else gets a 404."""

from __future__ import annotations

import hmac
import os
import time
from functools import lru_cache

from flask import Blueprint, Response, abort, current_app, request
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from webapp import workers
from webapp.db import connect

bp = Blueprint("metrics", __name__)

STATUSES = ("pass", "fail", "error", "platform_error")  # a verdict's status; platform_error: no verdict
REASONS = ("rate_limit", "queue_full", "waiting", "storage", "too_large", "bad_request", "grading_off", "other")

GRADINGS = Counter("amp_dojo_gradings", "Gradings stored, by lesson and status", ["lesson", "status"])
GRADING_SECONDS = Histogram(
    "amp_dojo_grading_seconds",
    "Seconds from a worker taking a submission to its verdict being stored",
    ["lesson"],
    buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200),
)
REFUSALS = Counter("amp_dojo_refusals", "Submissions the API declined, by reason", ["reason"])


@lru_cache(maxsize=1)
def shipped_lessons() -> frozenset[str]:
    """The lessons that come with AMP Dojo: the only lesson labels (any other is "other")."""
    from grader.lesson.loader import BUILT_IN

    return frozenset(path.stem for path in BUILT_IN.glob("*.yaml"))


def lesson_label(lesson: str | None) -> str:
    return lesson if lesson in shipped_lessons() else "other"


def graded(lesson: str | None, status: str | None, seconds: float | None) -> None:
    """One stored verdict (or platform error), counted once by the process that stored it."""
    label = lesson_label(lesson)
    GRADINGS.labels(label, status if status in STATUSES else "error").inc()
    if seconds is not None and seconds >= 0:
        GRADING_SECONDS.labels(label).observe(seconds)


def refused(status: int, message: str) -> None:
    """A declined submission, by the reason its status and message tell (store.Refused, the API's 503)."""
    REFUSALS.labels(reason_of(status, message)).inc()


def reason_of(status: int, message: str) -> str:
    text = message.lower()
    if status == 429:
        if "queue is full" in text:
            return "queue_full"
        if "waiting" in text:
            return "waiting"
        if "of code in the last 24 hours" in text:
            return "storage"
        return "rate_limit"
    if status == 413:
        return "too_large"
    if status == 503:
        return "grading_off"
    if status == 400:
        return "bad_request"
    return "other"


class StateGauges:
    """Gauges read from the database and the queue at scrape time: the same from every app process."""

    def __init__(self, config, queue):
        self.config, self.queue = config, queue

    def collect(self):
        alive = workers.alive(self.queue, self.config)
        with connect(self.config["DATABASE"]) as db:
            depth, oldest = workers.waiting(db)
            stored = db.execute("SELECT count(*) FROM submissions WHERE result IS NOT NULL").fetchone()[0]
        yield GaugeMetricFamily("amp_dojo_queue_depth", "Submissions waiting for a grader", value=depth)
        yield GaugeMetricFamily(
            "amp_dojo_queue_oldest_seconds",
            "How long the oldest waiting submission has waited",
            value=0.0 if oldest is None else max(0.0, time.time() - oldest),
        )
        yield GaugeMetricFamily("amp_dojo_workers_alive", "Grading workers with a recent heartbeat", value=alive)
        yield GaugeMetricFamily("amp_dojo_results_stored", "Submissions with a stored result", value=stored)


class _Default:
    """The default registry's metrics, inside the per-scrape registry."""

    def collect(self):
        yield from REGISTRY.collect()


def exposition(config, queue) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_Default())
    registry.register(StateGauges(config, queue))
    return generate_latest(registry)


def allowed(config) -> bool:
    """METRICS_TOKEN as a bearer token lets in any client; else METRICS_ALLOW: "loopback" (a client on this
    machine talking to the app directly: a request relayed by a proxy, which carries X-Forwarded-For, is not
    one, whatever address the proxy connects from), "any", or "none"."""
    token = config.get("METRICS_TOKEN")
    sent = request.headers.get("Authorization", "")
    if token and sent.startswith("Bearer ") and hmac.compare_digest(sent[7:].encode(), str(token).encode()):
        return True
    allow = config.get("METRICS_ALLOW") or "none"
    if allow == "any":
        return True
    if allow == "loopback":
        proxied = "X-Forwarded-For" in request.headers or "Forwarded" in request.headers
        direct = request.environ.get("werkzeug.proxy_fix.orig", {}).get("REMOTE_ADDR", request.remote_addr)
        return not proxied and direct in ("127.0.0.1", "::1")
    return False


@bp.get("/metrics")
def metrics():
    if not allowed(current_app.config):
        abort(404)
    body = exposition(current_app.config, current_app.extensions["amp_dojo_queue"])
    return Response(body, content_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})

"""Assignment and Grade Services: each course lesson is a line item in the platform's gradebook, and each graded
submission of a learner who came from that platform updates the score there.

The score each (context, learner, lesson) should have is a row of lti_scores, written when the grading is stored
(webapp.signals.graded) and kept until the platform took it: a Huey task (on a queue of its own, run by the web
app, which holds the database) posts it, and a 429, a 5xx or no answer at all leaves the row pending and retries
later with a longer wait each time. A platform that refuses for good (another 4xx) marks the row failed, with the
reason, for the instructor to see; "send all grades again" makes every row pending once more. A verdict an exam
holds back is left out until the hold ends (webapp.signals.released): then a task on the same queue, at the
window's close or at once, counts the course's scores for its lessons again and queues the ones that changed."""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import nullcontext
from datetime import datetime, timezone

import requests
from huey.exceptions import RetryTask
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.service_connector import ServiceConnector

from webapp import classroom, deadlines
from webapp.db import connect, transaction
from webapp.lti import platforms

log = logging.getLogger("amp_dojo.lti")
HTTP_TIMEOUT_S = 10
MAX_WAIT_S = 3600
QUEUE_NAME = "amp-dojo-lti"


def counted_score(db, learner: str, course_id: int, lesson: str) -> float | None:
    """The score of the learner's lesson that the course's gradebook counts (webapp/deadlines.py counted_scores:
    the same number as every page's). A verdict an exam holds back is not in it until the window closes, when
    `on_released` counts the course's scores again and sends those that changed."""
    user = db.execute("SELECT id FROM users WHERE learner = ?", (learner,)).fetchone()
    if user is None:
        return None
    return counted_for(db, course_id, [{"user_id": user["id"], "learner": learner, "lesson": lesson}]).get(
        (learner, lesson)
    )


def counted_for(db, course_id: int, rows: list) -> dict[tuple[str, str], float | None]:
    """(learner, lesson) -> counted score for rows with user_id, learner and lesson: counted_score for many, in
    one deadlines.counted_scores (a fixed number of queries, not a few per row); None for a lesson not in the
    course."""
    people = list({r["user_id"]: {"id": r["user_id"], "learner": r["learner"]} for r in rows}.values())
    wanted = {r["lesson"] for r in rows}
    items = [x for x in classroom.lessons(db, course_id) if x["lesson"] in wanted]
    if not people or not items:
        return {}
    return {key: c.score for key, c in deadlines.counted_scores(db, course_id, people, items).items()}


def backoff_s(tries: int) -> int:
    """How long a pending score waits after its n-th failed try: 2, 4, 8 ... seconds, at most an hour."""
    return min(2 ** max(tries, 1), MAX_WAIT_S)


class Retryable(Exception):
    """The platform is down, busy (429) or failing (5xx): the score waits and goes again."""


class TokenConnector(ServiceConnector):
    """pylti1p3's service connector with access tokens cached per connector (the Flask one shares them across
    every registration of an issuer, even after its keys changed) and a timeout on every request."""

    def __init__(self, registration):
        session = requests.Session()
        session.request = _with_timeout(session.request)
        super().__init__(registration, session)
        self._tokens: dict[str, tuple[str, float]] = {}

    def _get_cached_access_token(self, scope_key):
        token = self._tokens.get(scope_key)
        return token[0] if token and token[1] > time.time() else None

    def _cache_access_token(self, scope_key, access_token, expires_in):
        self._tokens[scope_key] = (access_token, time.time() + float(expires_in or 0) - 30)


def _with_timeout(request):
    def call(method, url, **kwargs):
        kwargs.setdefault("timeout", HTTP_TIMEOUT_S)
        return request(method, url, **kwargs)

    return call


def on_graded(_sender, db, row, result, config, **_extra) -> None:
    """A grading was stored: the learner's score in each LMS course that holds the lesson becomes pending."""
    targets = db.execute(
        "SELECT c.id AS context_ref, c.course_id, u.id AS user_id FROM users u "
        "JOIN lti_accounts a ON a.user_id = u.id "
        "JOIN lti_contexts c ON c.platform_id = a.platform_id AND c.ags IS NOT NULL "
        "JOIN enrollments e ON e.course_id = c.course_id AND e.user_id = u.id "
        "JOIN course_lessons cl ON cl.course_id = c.course_id AND cl.lesson = ? WHERE u.learner = ?",
        (row["lesson"], row["learner"]),
    ).fetchall()
    for t in targets:
        score = counted_score(db, row["learner"], t["course_id"], row["lesson"])
        if score is not None:
            mark_pending(db, t["context_ref"], t["user_id"], row["lesson"], score)
            score_queue(config).enqueue(t["context_ref"], t["user_id"], row["lesson"])


def mark_pending(db, context_ref: int, user_id: int, lesson: str, score: float) -> None:
    with transaction(db):
        db.execute(
            "INSERT INTO lti_scores (context_ref, user_id, lesson, score, state, tries, updated_at) "
            "VALUES (?, ?, ?, ?, 'pending', 0, ?) ON CONFLICT (context_ref, user_id, lesson) DO UPDATE SET "
            "score = excluded.score, state = 'pending', tries = 0, updated_at = excluded.updated_at",
            (context_ref, user_id, lesson, score, time.time()),
        )


def on_released(_sender, db, course_id, lessons, at, config, **_extra) -> None:
    """An exam's held verdicts are visible from `at` on: the course's scores for its lessons are counted again
    then (a task at that time, on the scores' queue, which keeps it across restarts), in a course linked to an
    LMS's gradebook."""
    linked = db.execute("SELECT 1 FROM lti_contexts WHERE course_id = ? AND ags IS NOT NULL", (course_id,)).fetchone()
    if linked is None:
        return
    if config is None:
        log.warning("course %s: exam results released without the app's config; send all grades again", course_id)
        return
    score_queue(config).release(course_id, lessons, at)


def recount(db, queue: ScoreQueue, course_id: int, lessons: list[str] | None) -> int:
    """The scores of the course's LMS learners for these lessons (None: all of the course's), counted again now;
    each that differs from the row the platform has or is getting becomes pending, with its task: how many. A
    second recount finds nothing new, so a release heard twice sends nothing twice."""
    targets = db.execute(
        "SELECT c.id AS context_ref, u.id AS user_id, u.learner, cl.lesson, s.score AS known, s.state "
        "FROM lti_contexts c JOIN lti_accounts a ON a.platform_id = c.platform_id JOIN users u ON u.id = a.user_id "
        "JOIN enrollments e ON e.course_id = c.course_id AND e.user_id = u.id "
        "JOIN course_lessons cl ON cl.course_id = c.course_id "
        "LEFT JOIN lti_scores s ON s.context_ref = c.id AND s.user_id = u.id AND s.lesson = cl.lesson "
        "WHERE c.course_id = ? AND c.ags IS NOT NULL AND EXISTS (SELECT 1 FROM submissions sub "
        "WHERE sub.learner = u.learner AND sub.lesson = cl.lesson AND sub.score IS NOT NULL)",
        (course_id,),
    ).fetchall()
    targets = [t for t in targets if lessons is None or t["lesson"] in lessons]
    counted = counted_for(db, course_id, targets)
    queued = 0
    for t in targets:
        score = counted.get((t["learner"], t["lesson"]))
        if score is None or (score == t["known"] and t["state"] in ("sent", "pending")):
            continue
        mark_pending(db, t["context_ref"], t["user_id"], t["lesson"], score)
        queue.enqueue(t["context_ref"], t["user_id"], t["lesson"])
        queued += 1
    return queued


def send_all_again(db, config, course_id: int) -> int:
    """Every score of the course's LMS contexts pending again (recounted), each with its task: how many."""
    rows = db.execute(
        "SELECT s.context_ref, s.user_id, s.lesson, u.learner FROM lti_scores s JOIN lti_contexts c "
        "ON c.id = s.context_ref JOIN users u ON u.id = s.user_id WHERE c.course_id = ?",
        (course_id,),
    ).fetchall()
    counted = counted_for(db, course_id, rows)
    for r in rows:
        score = counted.get((r["learner"], r["lesson"]))
        mark_pending(db, r["context_ref"], r["user_id"], r["lesson"], score or 0.0)
        score_queue(config).enqueue(r["context_ref"], r["user_id"], r["lesson"])
    return len(rows)


def failures(db, course_id: int) -> list:
    """The course's scores that have not reached the LMS, with why, for the instructor."""
    return db.execute(
        "SELECT u.username, s.lesson, s.score, s.state, s.tries, s.last_error, s.updated_at FROM lti_scores s "
        "JOIN lti_contexts c ON c.id = s.context_ref JOIN users u ON u.id = s.user_id "
        "WHERE c.course_id = ? AND s.state <> 'sent' ORDER BY s.updated_at DESC",
        (course_id,),
    ).fetchall()


def _line_item(db, ags: AssignmentsGradesService, context_ref: int, lesson: str) -> LineItem:
    row = db.execute(
        "SELECT url FROM lti_line_items WHERE context_ref = ? AND lesson = ?", (context_ref, lesson)
    ).fetchone()
    if row is not None:
        return LineItem({"id": row["url"]})
    from webapp.courses import lesson_title

    item = ags.find_or_create_lineitem(
        LineItem().set_tag(lesson).set_resource_id(lesson).set_label(lesson_title(lesson, "en")).set_score_maximum(1)
    )
    db.execute(
        "INSERT INTO lti_line_items (context_ref, lesson, url) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (context_ref, lesson, item.get_id()),
    )
    return item


def post(db, context_ref: int, user_id: int, lesson: str) -> str:
    """Posts the row's score to the platform; returns the row's new state. Raises Retryable."""
    row = db.execute(
        "SELECT s.score, s.state, c.ags, a.sub, p.* FROM lti_scores s JOIN lti_contexts c ON c.id = s.context_ref "
        "JOIN lti_platforms p ON p.id = c.platform_id JOIN lti_accounts a ON a.platform_id = p.id "
        "AND a.user_id = s.user_id WHERE s.context_ref = ? AND s.user_id = ? AND s.lesson = ?",
        (context_ref, user_id, lesson),
    ).fetchone()
    if row is None or row["state"] != "pending":
        return row["state"] if row else "gone"
    score = row["score"]
    try:
        ags = AssignmentsGradesService(TokenConnector(platforms.registration(db, row)), json.loads(row["ags"]))
        grade = Grade().set_score_given(score).set_score_maximum(1).set_user_id(row["sub"])
        grade.set_timestamp(datetime.now(timezone.utc).isoformat()).set_activity_progress("Completed")
        ags.put_grade(grade.set_grading_progress("FullyGraded"), _line_item(db, ags, context_ref, lesson))
    except LtiServiceException as exc:
        status = exc.response.status_code
        if status == 429 or status >= 500:
            raise Retryable(str(exc)) from exc
        return _done(db, context_ref, user_id, lesson, score, "failed", str(exc))
    except requests.RequestException as exc:
        raise Retryable(f"{type(exc).__name__}: {exc}") from exc
    except LtiException as exc:
        return _done(db, context_ref, user_id, lesson, score, "failed", str(exc))
    return _done(db, context_ref, user_id, lesson, score, "sent", None)


def _done(db, context_ref, user_id, lesson, score, state, error) -> str:
    """The row's outcome, unless its score changed meanwhile (a newer grading: its own task sends that one)."""
    db.execute(
        "UPDATE lti_scores SET state = ?, last_error = ?, tries = tries + 1, sent_at = ? "
        "WHERE context_ref = ? AND user_id = ? AND lesson = ? AND score = ? AND state = 'pending'",
        (state, error, time.time() if state == "sent" else None, context_ref, user_id, lesson, score),
    )
    return state


def _retry_later(db, context_ref, user_id, lesson, error: str) -> int:
    db.execute(
        "UPDATE lti_scores SET tries = tries + 1, last_error = ? WHERE context_ref = ? AND user_id = ? AND lesson = ?",
        (error, context_ref, user_id, lesson),
    )
    tries = db.execute(
        "SELECT tries FROM lti_scores WHERE context_ref = ? AND user_id = ? AND lesson = ?",
        (context_ref, user_id, lesson),
    ).scalar()
    return backoff_s(tries or 1)


class ScoreQueue:
    """The scores' Huey queue (in QUEUE_URL's storage, under a name of its own) and the task that posts one."""

    def __init__(self, config):
        from webapp.queue import make_huey

        self.database = config["DATABASE"]
        self.huey = make_huey(config["QUEUE_URL"], QUEUE_NAME)
        self.app = None  # the app whose context a task runs in (lesson titles); set by webapp.lti.init_app

        def send_score(context_ref: int, user_id: int, lesson: str) -> None:
            with self.app.app_context() if self.app else nullcontext(), connect(self.database) as db:
                try:
                    post(db, context_ref, user_id, lesson)
                except Retryable as exc:
                    delay = _retry_later(db, context_ref, user_id, lesson, str(exc))
                    log.info("LMS score for %s not sent (%s); again in %s s", lesson, exc, delay)
                    raise RetryTask(str(exc), delay=delay) from None

        def release(course_id: int, lessons: list[str] | None) -> None:
            with self.app.app_context() if self.app else nullcontext(), connect(self.database) as db:
                queued = recount(db, self, course_id, lessons)
                log.info("course %s: exam results released, %s LMS scores queued", course_id, queued)

        self.task = self.huey.task(name="lti_score", retries=12)(send_score)
        self.release_task = self.huey.task(name="lti_release", retries=3, retry_delay=60)(release)

    def enqueue(self, context_ref: int, user_id: int, lesson: str) -> None:
        self.task(context_ref, user_id, lesson)

    def release(self, course_id: int, lessons: list[str] | None, at: float) -> None:
        """Counts the course's scores for these lessons again at `at` (now, if that has come)."""
        if at <= time.time():
            self.release_task(course_id, lessons)
        else:
            self.release_task.schedule((course_id, lessons), eta=datetime.fromtimestamp(at, timezone.utc))

    def run_pending(self, now: float | None = None, limit: int = 100) -> int:
        """Runs the due tasks here (the web app's thread, tests); `now` reads the schedule as of then."""
        stamp = datetime.fromtimestamp(now if now is not None else time.time(), timezone.utc).replace(tzinfo=None)
        for task in self.huey.read_schedule(stamp):
            self.huey.enqueue(task)
        done = 0
        while done < limit and (task := self.huey.dequeue()) is not None:
            self.huey.execute(task, stamp)
            done += 1
        return done

    def sweep(self) -> int:
        """Pending rows whose tasks are gone (retries spent, a queue emptied) get a task again."""
        with connect(self.database) as db:
            rows = db.execute(
                "SELECT context_ref, user_id, lesson FROM lti_scores WHERE state = 'pending' AND updated_at < ?",
                (time.time() - MAX_WAIT_S,),
            ).fetchall()
            for r in rows:
                db.execute(
                    "UPDATE lti_scores SET updated_at = ? WHERE context_ref = ? AND user_id = ? AND lesson = ?",
                    (time.time(), r["context_ref"], r["user_id"], r["lesson"]),
                )
                self.enqueue(r["context_ref"], r["user_id"], r["lesson"])
        return len(rows)


_queues: dict[tuple[str, str], ScoreQueue] = {}
_queues_lock = threading.Lock()


def score_queue(config) -> ScoreQueue:
    """One ScoreQueue per (database, queue) in this process."""
    key = (config["DATABASE"], config["QUEUE_URL"])
    with _queues_lock:
        if key not in _queues:
            _queues[key] = ScoreQueue(config)
        return _queues[key]


class ScoreThread(threading.Thread):
    """Runs the scores' tasks in the web app process (it holds the database; grading workers may not)."""

    def __init__(self, config, interval_s: float = 1.0):
        super().__init__(name="lti-scores", daemon=True)
        self.queue, self.interval_s = score_queue(config), interval_s

    def run(self):
        last_sweep = 0.0
        while True:
            try:
                if not self.queue.run_pending() and time.monotonic() - last_sweep > 60:
                    last_sweep = time.monotonic()
                    self.queue.sweep()
            except Exception:  # the LMS or the queue failing must not end the thread
                log.exception("LMS score thread")
            time.sleep(self.interval_s)

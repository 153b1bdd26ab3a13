"""Fair grading. The grading queue (Huey) is first come, first served, and a worker grades what it takes off it;
so the web app decides the order: it hands the queue at most one submission per learner at a time. A learner's
next submission waits in the database (status `queued`, `enqueued_at` NULL) until their previous one has a verdict,
then joins the back of the queue. Whatever one learner sends, every other learner's submission waits behind at most
one of theirs: the queue serves learners round-robin. (A learner is an account, or an anonymous session cookie; a
client that sheds its cookie is held by the per-address caps of webapp/store.py.)

Every hand-over is a compare-and-set inside the database's write lock, so the request thread, the collector
thread and other app processes never enqueue the same submission twice, nor two of one learner's at once; and
the enqueue happens inside that transaction, so a queue that is down leaves the submission waiting, to be handed
over by the next collector pass.

A cancelled submission's task is taken back out of the queue (take_back), so cancelling frees the learner's
place at once; until the queue confirms that the task has left it (the queue was down, say), the cancelled
submission keeps its learner's place, and counts toward the caps of webapp/store.py: the queue never holds more
than one task per learner, whatever they cancel."""

from __future__ import annotations

import logging
import time

from webapp import store
from webapp.db import transaction

log = logging.getLogger("amp_dojo.dispatch")


def dispatch(db, queue, config, learner: str) -> str | None:
    """Enqueues `learner`'s oldest waiting submission, unless one of theirs is already in the queue or being
    graded; returns its id, or None."""
    try:
        with transaction(db):
            busy = db.execute(
                "SELECT 1 FROM submissions WHERE learner = ? AND enqueued_at IS NOT NULL "
                "AND (status IN ('queued', 'running') OR error = 'cancelled') LIMIT 1",
                (learner,),
            ).fetchone()
            if busy is not None:
                return None
            row = db.execute(
                "SELECT * FROM submissions WHERE learner = ? AND status = 'queued' AND enqueued_at IS "
                "NULL ORDER BY created_at, id LIMIT 1",
                (learner,),
            ).fetchone()
            if row is None:
                return None
            now = time.time()
            db.execute(
                "UPDATE submissions SET enqueued_at = ?, queued_at = ? WHERE id = ? AND enqueued_at IS NULL",
                (now, now, row["id"]),
            )
            queue.enqueue(store.payload(row, config))
    except Exception:  # the queue is down, say: the submission waits, and the collector hands it over later
        log.exception("could not hand learner %s's next submission to the grading queue; will retry", learner)
        return None
    return row["id"]


def take_back(db, queue, sid: str, attempt: int) -> None:
    """After a cancellation: the attempt's task out of the queue, if it still waits there (a worker that took
    it reads the cancel key and stops), and the submission's place freed (enqueued_at cleared). Raises if the
    queue cannot be asked: the place stays held, and the collector tries again."""
    queue.withdraw(sid, attempt)
    with transaction(db):
        db.execute(
            "UPDATE submissions SET enqueued_at = NULL WHERE id = ? AND attempt = ? AND error = 'cancelled'",
            (sid, attempt),
        )


def take_back_cancelled(db, queue, config) -> None:
    """The collector's retry of take_back, for cancellations whose task the queue could not be asked about;
    each learner freed gets their next submission handed over."""
    rows = db.execute(
        "SELECT id, attempt, learner FROM submissions WHERE error = 'cancelled' AND enqueued_at IS NOT NULL"
    ).fetchall()
    for row in rows:
        try:
            take_back(db, queue, row["id"], row["attempt"])
        except Exception:
            log.exception("could not take cancelled submission %s's task out of the grading queue", row["id"])
            return  # the queue is down: the next pass tries again
        dispatch(db, queue, config, row["learner"])

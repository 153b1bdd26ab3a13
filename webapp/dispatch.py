"""Fair grading. The grading queue (Huey) is first come, first served, and a worker grades what it takes off it;
so the web app decides the order: it hands the queue at most one submission per learner at a time. A learner's
next submission waits in the database (status `queued`, `enqueued_at` NULL) until their previous one has a verdict,
then joins the back of the queue. Whatever one learner sends, every other learner's submission waits behind at most
one of theirs: the queue serves learners round-robin. (A learner is an account, or an anonymous session cookie; a
client that sheds its cookie is held by the per-address caps of webapp/store.py.)

Accounts are cheap, so learners are also fair per client address: at most QUEUE_TURNS_PER_IP submissions from
one address wait in the queue at once (those being graded do not count, so an address alone on the server keeps
every worker busy). Twelve accounts made from one address put at most that many ahead of a learner elsewhere;
the learners behind one address (a class behind a NAT, or one person's sock puppets: the server cannot tell them
apart) take turns among themselves, the one served least recently first.

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
    graded, or its address already has QUEUE_TURNS_PER_IP waiting there: then the address's next turn goes to
    its learner served least recently (next_at_address), whoever asked. Returns the id handed over, or None."""
    try:
        with transaction(db):
            row = next_of(db, learner)
            if row is None:
                return None
            cap = int(config.get("QUEUE_TURNS_PER_IP") or 0)
            if row["client_ip"] is not None and cap:
                if waiting_from(db, row["client_ip"]) >= cap:
                    return None
                row = next_at_address(db, row["client_ip"]) or row
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


def next_of(db, learner: str):
    """The learner's oldest submission not yet handed over, if none of theirs is in the queue or being graded."""
    busy = db.execute(  # a cancelled task the queue has not given back yet still holds the learner's place
        "SELECT 1 FROM submissions WHERE learner = ? AND enqueued_at IS NOT NULL "
        "AND (status IN ('queued', 'running') OR error = 'cancelled') LIMIT 1",
        (learner,),
    ).fetchone()
    if busy is not None:
        return None
    return db.execute(
        "SELECT * FROM submissions WHERE learner = ? AND status = 'queued' AND enqueued_at IS NULL "
        "ORDER BY created_at, id LIMIT 1",
        (learner,),
    ).fetchone()


def waiting_from(db, client_ip: str) -> int:
    """Submissions sent from this address that wait in the grading queue (handed over, no worker on them yet),
    cancelled ones the queue has not given back included."""
    return db.execute(
        "SELECT count(*) FROM submissions WHERE client_ip = ? AND enqueued_at IS NOT NULL "
        "AND (status = 'queued' OR error = 'cancelled')",
        (client_ip,),
    ).fetchone()[0]


def next_at_address(db, client_ip: str):
    """The address's next turn: among its learners with nothing in the queue or being graded, the oldest
    waiting submission of the one whose last submission was handed over longest ago (never: first). Learners
    behind one address (a class behind a NAT) take turns among themselves, as learners do in the queue."""
    return db.execute(
        "SELECT s.* FROM submissions s WHERE s.client_ip = ? AND s.status = 'queued' AND s.enqueued_at IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM submissions b WHERE b.learner = s.learner AND b.enqueued_at IS NOT NULL "
        "AND (b.status IN ('queued', 'running') OR b.error = 'cancelled')) "
        "ORDER BY COALESCE((SELECT max(h.enqueued_at) FROM submissions h WHERE h.learner = s.learner), 0), "
        "s.created_at, s.id LIMIT 1",
        (client_ip,),
    ).fetchone()

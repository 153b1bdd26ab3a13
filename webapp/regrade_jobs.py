"""A regrade's work on a grading worker (webapp/regrades.py is the web app's side). Like a grading, it shares
nothing with the web app but the queue: the task carries the submissions' code, and each new verdict goes
back under the `regrade` key of (submission, regrade id). One task grades one submission, then enqueues the
next step at a priority below learners' gradings (webapp/queue.py enqueue_regrade): a regrade of a whole
class never holds a worker while a learner waits. An instructor's cancel is read before each step and during
one (the grader stops, as for a learner's cancel)."""

from __future__ import annotations

import logging

log = logging.getLogger("amp_dojo.regrade")

PRIORITY = -10  # learners' gradings are enqueued at 0; Huey's SQLite storage takes the highest first


def cancel_key(regrade_id: int) -> tuple[str, str, int]:
    return ("cancel", "regrade", regrade_id)


def step(queue, payload: dict) -> None:
    """Grades the payload's first submission again, reports it, and hands the rest to the next step."""
    from webapp.grading import CancelWatch, json_safe, run_grader

    rid, items = payload["regrade_id"], payload["items"]
    if not items or queue.peek(*cancel_key(rid)) is not None:
        return
    item, rest = items[0], items[1:]
    with CancelWatch(queue, "regrade", rid) as cancel:  # polls ("cancel", "regrade", rid)
        grading = {**payload, "submission_id": item["submission_id"], "code": item["code"]}
        outcome = run_grader(queue.settings, grading, lambda *_a, **_k: None, cancel.event, queue.launchers)
    if cancel.event.is_set():
        log.info("regrade %s: cancelled", rid)
        return
    queue.put("regrade", item["submission_id"], rid, json_safe(outcome))
    if rest:
        queue.enqueue_regrade({**payload, "items": rest})

"""Submission records in the web app's database: creating them (before they are
enqueued, so an accepted submission is never lost), the limits that guard the
queue, and the JSON shapes the API returns."""

from __future__ import annotations

import json
import math
import secrets
import time

from webapp import bounds, code_views, exams, learner_lessons
from webapp.db import transaction
from webapp.i18n import noop_gettext

ACTIVE = ("queued", "running")
WINDOW_S = 60.0
LEGACY_RESULT_BYTES = 1048576  # larger stored documents predate MAX_RESULT_BYTES: served cut
CANCELLED = "cancelled"  # the `error` of a submission its learner cancelled before the verdict
DAY_S = 86400.0
# A submission holds a place in the grading queue (or on a worker) from its hand-over to its verdict; a cancelled
# one until its task is known to have left the queue (webapp/dispatch.py take_back clears its enqueued_at). The
# caps count these places, whatever the status says: the queue cannot hold more than they allow.
HOLDS_PLACE = "(status IN ('queued', 'running') OR (error = 'cancelled' AND enqueued_at IS NOT NULL))"


class Refused(Exception):
    """A request the app declines, with the HTTP status and Retry-After to send. `message` is English with
    `{placeholders}` for `values`: the API words it in the learner's language (webapp/i18n.py)."""

    def __init__(self, status: int, message: str, retry_after: int | None = None, **values):
        super().__init__(message.format(**values) if values else message)
        self.status, self.message, self.retry_after, self.values = status, message, retry_after, values


def payload(row, config) -> dict:
    """The task: everything a worker needs, nothing from this database."""
    return {
        "submission_id": row["id"],
        "attempt": row["attempt"],
        "exercise_id": row["lesson"],
        "code": row["code"],
        "device": config["DEVICE"],
        "sandbox": config["SANDBOX"],
        "allow_local": bool(config["ALLOW_LOCAL_SANDBOX"]),
        "heartbeat_s": max(0.5, float(config["LEASE_SECONDS"]) / 5),
    }


def _retry_after(oldest: float, now: float) -> int:
    return max(1, math.ceil(oldest + WINDOW_S - now))


def bucket_wait(times: list[float], now: float, burst: int, per_minute: float) -> int | None:
    """Seconds until a token bucket (`burst` tokens, refilled at `per_minute`) that paid one token for each of
    `times` (ascending) has a token again; None if it has one now. Replayed from the stored submissions, so every
    app process that shares the database agrees; it starts full at the earliest moment that matters."""
    rate = per_minute / 60.0
    last = now - burst / rate
    tokens = float(burst)
    for t in times:
        if t <= last:
            continue
        tokens = min(burst, tokens + (t - last) * rate) - 1
        last = t
    tokens = min(burst, tokens + (now - last) * rate)
    return None if tokens >= 1 else max(1, math.ceil((1 - tokens) / rate))


def check_rate(db, learner: str, client_ip: str | None, config, now: float):
    """Raises Refused(429): per learner, a burst of RATE_BURST submissions, then RATE_LIMIT a minute (a run the
    learner cancelled gives its token back); per address, IP_RATE_LIMIT a minute, a high ceiling for clients that
    shed their cookie (a class behind one NAT address shares it)."""
    burst, per_minute = int(config["RATE_BURST"] or 0), float(config["RATE_LIMIT"] or 0)
    if burst and per_minute:
        rows = db.execute(
            "SELECT created_at FROM submissions WHERE learner = ? AND created_at > ? AND NOT "
            "(status = 'error' AND error = ?) ORDER BY created_at",
            (learner, now - burst / (per_minute / 60.0), CANCELLED),
        ).fetchall()
        wait = bucket_wait([r["created_at"] for r in rows], now, burst, per_minute)
        if wait:
            raise Refused(
                429,
                noop_gettext(
                    "Too many runs in a short time: run again in {n} s (after a burst "
                    "of {burst}, at most {rate} a minute)."
                ),
                wait,
                burst=burst,
                rate=round(per_minute),
                n=wait,
            )
    limit = config["IP_RATE_LIMIT"]
    if client_ip is not None and limit:
        rows = db.execute(
            "SELECT created_at FROM submissions WHERE client_ip = ? AND created_at > ? "
            "ORDER BY created_at DESC LIMIT ?",
            (client_ip, now - WINDOW_S, int(limit)),
        ).fetchall()
        if len(rows) >= int(limit):
            wait = _retry_after(rows[-1]["created_at"], now)
            raise Refused(
                429,
                noop_gettext(
                    "Your network address sent {limit} submissions in the last minute, "
                    "the most this server takes from one address: run again in {n} s."
                ),
                wait,
                limit=int(limit),
                n=wait,
            )


def _places(db, column: str | None = None, value: str | None = None) -> int:
    """Submissions waiting, being graded, or cancelled with their task still in the queue: all of them, or those
    whose `column` is `value`."""
    if column is None:  # the queue's own line, handed over or not; two counts, each on its own index
        waiting = db.execute("SELECT count(*) FROM submissions WHERE status = 'queued'").fetchone()[0]
        return (
            waiting
            + db.execute(
                "SELECT count(*) FROM submissions WHERE error = 'cancelled' AND enqueued_at IS NOT NULL"
            ).fetchone()[0]
        )
    return db.execute(f"SELECT count(*) FROM submissions WHERE {column} = ? AND {HOLDS_PLACE}", (value,)).fetchone()[0]


def check_queue(db, config, learner: str, client_ip: str | None):
    """Raises Refused(429) when QUEUE_MAX submissions already wait, or when this learner (or address) already has
    its share waiting or being graded: one client must not fill the queue for everyone. A cancelled submission
    counts until its task has left the queue."""
    waiting = _places(db)
    if waiting >= int(config["QUEUE_MAX"]):
        raise Refused(
            429,
            noop_gettext("The grading queue is full ({n} submissions are waiting): run again in a minute."),
            30,
            n=waiting,
        )
    limit = config["MAX_WAITING_PER_LEARNER"]
    if limit:
        mine = _places(db, "learner", learner)
        if mine >= int(limit):
            raise Refused(
                429,
                noop_gettext(
                    "{n} of your submissions are still waiting or being graded: wait for "
                    "their results (or cancel one), then run again."
                ),
                5,
                n=mine,
            )
    limit = config["MAX_WAITING_PER_IP"]
    if client_ip is not None and limit:
        theirs = _places(db, "client_ip", client_ip)
        if theirs >= int(limit):
            raise Refused(
                429,
                noop_gettext(
                    "{n} submissions from your network address are waiting or being "
                    "graded, the most this server takes from one address: run again in a "
                    "moment."
                ),
                10,
                n=theirs,
            )


CODE_SIZE = "coalesce(code_bytes, length(code))"  # code_bytes: NULL for submissions stored before it existed


def _storage_wait(db, column: str, value: str, now: float, excess: int) -> int:
    """Seconds until `excess` bytes of `column`'s code leave the last 24 hours (read from the oldest on, at most
    1000 submissions: past those, when the 1000th leaves)."""
    freed, leaves = 0, now + DAY_S
    for r in db.execute(
        f"SELECT created_at, {CODE_SIZE} AS n FROM submissions WHERE {column} = ? AND created_at > ? "
        "ORDER BY created_at LIMIT 1000",
        (value, now - DAY_S),
    ):
        freed, leaves = freed + int(r["n"] or 0), r["created_at"] + DAY_S
        if freed >= excess:
            break
    return max(1, math.ceil(leaves - now))


STORAGE_MESSAGES = {
    "learner": noop_gettext(
        "You sent {mb} MB of code in the last 24 hours, the most this server keeps from one learner a day "
        "(cancelled runs count too): run again in {n} h."
    ),
    "client_ip": noop_gettext(
        "Your network address sent {mb} MB of code in the last 24 hours, the most this server keeps from one "
        "address a day (cancelled runs count too): run again in {n} h."
    ),
}


def _megabytes(size: int) -> float | int:
    """Decimal megabytes, to 3 significant digits: 8 for 8000000, 0.2 for 200000."""
    mb = float(f"{size / 1e6:.3g}")
    return int(mb) if mb.is_integer() else mb


def check_storage(db, config, learner: str, client_ip: str | None, size: int, now: float) -> None:
    """Raises Refused(429) when this submission would take the code stored in the last 24 hours past
    CODE_BYTES_PER_LEARNER_DAY for its learner or CODE_BYTES_PER_IP_DAY for its address. Counted from the size
    each submission had when it came (code_bytes), so a cancelled run, whose code is dropped, still counts."""
    for column, value, key in (
        ("learner", learner, "CODE_BYTES_PER_LEARNER_DAY"),
        ("client_ip", client_ip, "CODE_BYTES_PER_IP_DAY"),
    ):
        limit = int(config[key] or 0)
        if value is None or not limit:
            continue
        used = db.execute(
            f"SELECT coalesce(sum({CODE_SIZE}), 0) FROM submissions WHERE {column} = ? AND created_at > ?",
            (value, now - DAY_S),
        ).fetchone()[0]
        if int(used) + size > limit:
            wait = _storage_wait(db, column, value, now, int(used) + size - limit)
            raise Refused(429, STORAGE_MESSAGES[column], wait, mb=_megabytes(limit), n=math.ceil(wait / 3600))


def create(db, *, learner: str, client_ip: str | None, lesson: str, code: str, lang: str, config) -> dict:
    """Stores the submission (status queued) after the limits; the caller enqueues it."""
    now = time.time()
    exam_courses, refusal = exams.admit(db, learner, lesson, now)  # outside an exam's window: logged, refused
    if refusal is not None:
        raise Refused(403, refusal[0], **refusal[1])
    with transaction(db):
        check_rate(db, learner, client_ip, config, now)
        check_queue(db, config, learner, client_ip)
        size = len(code.encode("utf-8"))
        check_storage(db, config, learner, client_ip, size, now)
        sid = secrets.token_hex(8)
        db.execute(
            "INSERT INTO submissions (id, learner, client_ip, lesson, code, code_bytes, lang, status, attempt, "
            "created_at, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', 1, ?, ?)",
            (sid, learner, client_ip, lesson, code, size, lang, now, now),
        )
        db.execute(
            "INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
            "VALUES (?, 1, 'queued', 'progress', ?, ?)",
            (sid, json.dumps({"stage": "queued"}), now),
        )
        learner_lessons.submitted(db, learner, lesson, now)
        exams.log(db, exam_courses, learner, lesson, sid, "accepted", now)
    code_views.remember(db, sid, code)
    return get(db, sid)


def get(db, sid: str, learner: str | None = None):
    """The row, or None; with `learner`, only that learner's own."""
    row = db.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
    if row is None or (learner is not None and row["learner"] != learner):
        return None
    return row


def position(db, row) -> int | None:
    """1-based place in the line: among the submissions handed to the grading queue, by when each was handed
    over; a submission still waiting for its learner's previous one (webapp/dispatch.py) is behind all of those
    and behind its learner's earlier ones."""
    if row["status"] != "queued":
        return None
    if row["enqueued_at"] is not None:
        ahead = db.execute(
            "SELECT count(*) FROM submissions WHERE status = 'queued' AND enqueued_at IS NOT NULL "
            "AND (queued_at < ? OR (queued_at = ? AND id < ?))",
            (row["queued_at"], row["queued_at"], row["id"]),
        ).fetchone()[0]
        return ahead + 1
    handed = db.execute(
        "SELECT count(*) FROM submissions WHERE status = 'queued' AND enqueued_at IS NOT NULL"
    ).fetchone()[0]
    own = db.execute(
        "SELECT count(*) FROM submissions WHERE learner = ? AND (status = 'running' OR "
        "(status = 'queued' AND enqueued_at IS NULL)) AND (created_at < ? OR (created_at = ? AND id < ?))",
        (row["learner"], row["created_at"], row["created_at"], row["id"]),
    ).fetchone()[0]
    return handed + own + 1


def events(db, sid: str, after: int = 0) -> list[dict]:
    rows = db.execute(
        "SELECT id, type, data FROM events WHERE submission_id = ? AND id > ? ORDER BY id", (sid, after)
    ).fetchall()
    return [{"id": r["id"], "type": r["type"], "data": json.loads(r["data"])} for r in rows]


def cancel(db, row) -> bool:
    """Ends a queued or running submission without a verdict, once (False if it had already ended). The
    grading worker is told through the queue (webapp/grading.py) and stops; the task, if it still waits, is
    taken back (webapp/dispatch.py take_back). Its code is dropped now (its size, code_bytes, still counts
    toward the day's storage): a cancelled run is never graded, and nobody's storage fills with them."""
    now = time.time()
    with transaction(db):
        cur = db.execute(
            "UPDATE submissions SET status = 'error', error = ?, finished_at = ?, code = '' "
            "WHERE id = ? AND attempt = ? AND status IN ('queued', 'running')",
            (CANCELLED, now, row["id"], row["attempt"]),
        )
        if cur.rowcount != 1:
            return False
        db.execute("DELETE FROM code_views WHERE submission_id = ?", (row["id"],))
        db.execute(
            "INSERT INTO events (submission_id, attempt, source, type, data, created_at) "
            "VALUES (?, ?, 'done', 'done', ?, ?) ON CONFLICT DO NOTHING",
            (row["id"], row["attempt"], json.dumps({"status": "error", "error": CANCELLED, "cancelled": True}), now),
        )
    return True


def urls(sid: str) -> dict:
    return {
        "self": f"/api/submissions/{sid}",
        "stream": f"/api/submissions/{sid}/stream",
        "cancel": f"/api/submissions/{sid}/cancel",
        "page": f"/submissions/{sid}",
    }


def summary(row) -> dict:
    """A submission without its events and result: for lists."""
    return {
        "id": row["id"],
        "lesson": row["lesson"],
        "status": row["status"],
        "attempt": row["attempt"],
        "result_status": row["result_status"],
        "score": row["score"],
        "error": row["error"],
        "cancelled": row["status"] == "error" and row["error"] == CANCELLED,
        "created_at": row["created_at"],
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
        "urls": urls(row["id"]),
    }


def result_of(row, lang: str = "en") -> dict | None:
    """The stored result document with the grader's messages worded in `lang` (grader/wording/phrases.py)."""
    if not row["result"]:
        return None
    from grader.wording.phrases import localized

    document = json.loads(row["result"])
    if len(row["result"]) > LEGACY_RESULT_BYTES:  # stored before results were bounded (webapp/bounds.py)
        document = bounds.result(document, LEGACY_RESULT_BYTES)
    return localized(document, lang)


def pruned(row) -> bool:
    """Whether the submission's code was dropped (a cancelled run's, webapp/store.py cancel)."""
    return row["status"] == "error" and row["error"] == CANCELLED and row["code"] == ""


def detail(db, row, after: int = 0, lang: str = "en") -> dict:
    """Everything the results panel needs, whether the grading is waiting, running or over."""
    data = summary(row)
    data.update(
        code=None if pruned(row) else row["code"],
        position=position(db, row),
        events=events(db, row["id"], after),
        result=result_of(row, lang),
    )
    return data


def history(db, learner: str, lesson: str, limit: int = 20) -> list[dict]:
    rows = db.execute(
        "SELECT * FROM submissions WHERE learner = ? AND lesson = ? ORDER BY created_at DESC LIMIT ?",
        (learner, lesson, limit),
    ).fetchall()
    return [summary(r) for r in rows]


def progress(db, learner: str) -> dict[str, str]:
    """lesson id -> 'attempted' or 'passed' (lessons never tried are absent)."""
    rows = db.execute(
        "SELECT lesson, max(CASE WHEN result_status = 'pass' THEN 1 ELSE 0 END) AS passed "
        "FROM submissions WHERE learner = ? GROUP BY lesson",
        (learner,),
    ).fetchall()
    out = {r["lesson"]: "passed" if r["passed"] else "attempted" for r in rows}
    for lesson, (since, _until) in exams.holding(db, learner).items():  # a pass an exam holds back: not yet
        if (
            out.get(lesson) == "passed"
            and not db.execute(
                "SELECT 1 FROM submissions WHERE learner = ? AND lesson = ? AND result_status = 'pass' AND created_at < ?",
                (learner, lesson, since),
            ).fetchone()
        ):
            out[lesson] = "attempted"
    return out

"""Open result streams, counted in the database so that MAX_STREAMS and
MAX_STREAMS_PER_LEARNER hold across every app process that shares it.

Each open stream holds a server thread for as long as grading takes; without a
cap, a few learners with many tabs could take every thread and stop the site.
A slot is a row; it is deleted when the stream ends however it ends, and a row
left by a process that died expires after the longest a stream may stay open."""

from __future__ import annotations

import secrets
import time

from webapp.db import connect, transaction

GRACE_S = 30.0


class StreamSlots:
    def __init__(self, database: str, stream_seconds: float):
        self.database = database
        self.lifetime = float(stream_seconds) + GRACE_S

    def take(self, db, learner: str, total: int, per_learner: int) -> str | None:
        """A slot id, or None past either cap."""
        now = time.time()
        with transaction(db):
            db.execute("DELETE FROM stream_slots WHERE expires_at < ?", (now,))
            open_total = db.execute("SELECT count(*) FROM stream_slots").fetchone()[0]
            mine = db.execute("SELECT count(*) FROM stream_slots WHERE learner = ?", (learner,)).fetchone()[0]
            if open_total >= total or mine >= per_learner:
                return None
            slot = secrets.token_hex(8)
            db.execute("INSERT INTO stream_slots (id, learner, expires_at) VALUES (?, ?, ?)",
                       (slot, learner, now + self.lifetime))
        return slot

    def give_back(self, slot: str) -> None:
        """From the WSGI server's close(), after the request's own connection is gone."""
        db = connect(self.database)
        try:
            db.execute("DELETE FROM stream_slots WHERE id = ?", (slot,))
        finally:
            db.close()

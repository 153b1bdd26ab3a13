"""Open result streams, counted in the database so that MAX_STREAMS,
MAX_STREAMS_PER_LEARNER and MAX_STREAMS_PER_IP hold across every app process
that shares it. The per-address cap is what stops one client that mints a
fresh anonymous cookie per request from holding every stream.

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

    def take(
        self, db, learner: str, client_ip: str | None, total: int, per_learner: int, per_ip: int = 0
    ) -> str | None:
        """A slot id, or None past any cap (`per_ip` 0, or no address: no per-address cap)."""
        now = time.time()
        with transaction(db):
            db.execute("DELETE FROM stream_slots WHERE expires_at < ?", (now,))
            open_total = db.execute("SELECT count(*) FROM stream_slots").fetchone()[0]
            mine = db.execute("SELECT count(*) FROM stream_slots WHERE learner = ?", (learner,)).fetchone()[0]
            if open_total >= total or mine >= per_learner or self._address_full(db, client_ip, per_ip):
                return None
            slot = secrets.token_hex(8)
            db.execute(
                "INSERT INTO stream_slots (id, learner, client_ip, expires_at) VALUES (?, ?, ?, ?)",
                (slot, learner, client_ip, now + self.lifetime),
            )
        return slot

    @staticmethod
    def _address_full(db, client_ip: str | None, per_ip: int) -> bool:
        if not per_ip or client_ip is None:
            return False
        return db.execute("SELECT count(*) FROM stream_slots WHERE client_ip = ?", (client_ip,)).fetchone()[0] >= per_ip

    def give_back(self, slot: str) -> None:
        """From the WSGI server's close(), after the request's own connection is gone."""
        db = connect(self.database)
        try:
            db.execute("DELETE FROM stream_slots WHERE id = ?", (slot,))
        finally:
            db.close()

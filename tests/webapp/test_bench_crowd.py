"""bench/latency.py's crowd tells the truth: learners follow their submissions as the page does (a refused stream
falls back to polling), each from a loopback address of its own as bench/class_load.py spreads them, and a verdict
is counted lost only when it never arrives. A small crowd (three learners, code that never compiles, so each
grading takes a moment) on the real app (web server and one worker as subprocesses)."""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import latency  # noqa: E402
from e2e.amp_dojo_live import LiveApp  # noqa: E402

from grader.lesson.loader import load_exercise  # noqa: E402

NEVER_COMPILES = "def train_step(model, optimizer, inputs, targets, device_type, amp_dtype)\n    pass\n"


@pytest.fixture(scope="module")
def one_stream_per_address(tmp_path_factory):
    """The real app, where one address may hold one live stream, and 127.0.0.1's is taken (another tab of the
    learner's keeps it open): every stream a crowd on that one address asks for is refused."""
    settings = {**latency.OPEN_LIMITS, "MAX_STREAMS_PER_IP": 1, "WARM_AT_START": False}
    with LiveApp(tmp_path_factory.mktemp("crowd"), settings=settings) as app:
        with sqlite3.connect(app.settings["DATABASE"]) as db:
            db.execute(
                "INSERT INTO stream_slots (id, learner, client_ip, expires_at) VALUES (?, ?, ?, ?)",
                ("another-tab", "someone", "127.0.0.1", time.time() + 3600),
            )
        yield app


@pytest.mark.parametrize("spread", [False, True], ids=["one address", "an address each"])
def test_every_verdict_of_a_small_crowd_arrives_even_where_its_streams_are_refused(one_stream_per_address, spread):
    exercise = load_exercise("autocast")
    out = latency.crowd(
        one_stream_per_address, exercise, learners=3, window=0.5, code=NEVER_COMPILES, timeout=60, spread=spread
    )
    assert out["lost"] == [] and out["refused"] == [] and out["verdicts"] == 3, out
    if spread:
        assert out["by_polling"] == 0, out  # each learner's own stream brought its verdict
    else:
        assert out["by_polling"] == 3, out  # every stream refused: polling brought each verdict

"""What a cancelled submission leaves behind, and what the queue's length costs: a cancelled task leaves the
grading queue (or keeps counting toward the caps until it has), the lost-task check asks the queue about one
task by its key and only in the background collector, and the code stored per learner and per address a day
is bounded, cancelled runs included, their code dropped."""

import time

import pytest
from webapp_testing import csrf_headers

from webapp import config as defaults
from webapp.collector import collect
from webapp.db import connect

CODE = "def train_step(*args):\n    return 0.0\n"
BIG = "x = 0\n" + "# padding\n" * 6000  # about 60 kB, as the red team sent


def submit(client, code=CODE, lang=None):
    url = "/api/lessons/autocast/submissions" + (f"?lang={lang}" if lang else "")
    return client.post(url, json={"code": code}, headers=csrf_headers(client))


def cancel(client, sid):
    response = client.post(f"/api/submissions/{sid}/cancel", headers=csrf_headers(client))
    assert response.status_code == 200, response.get_json()
    return response


def row(app, sid):
    db = connect(app.config["DATABASE"])
    try:
        return dict(db.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone())
    finally:
        db.close()


def background_pass(app):
    db = connect(app.config["DATABASE"])
    try:
        collect(db, app.extensions["amp_dojo_queue"], app.config)
    finally:
        db.close()


@pytest.fixture(params=["sqlite-queue", "redis-queue"])
def queue_url(request, tmp_path):
    if request.param == "sqlite-queue":
        return f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    return request.getfixturevalue("redis_url")


def test_submitting_and_cancelling_many_times_leaves_the_queue_and_an_honest_place_unchanged(make_app, queue_url):
    app = make_app(QUEUE_URL=queue_url, MAX_WAITING_PER_LEARNER=2, MAX_WAITING_PER_IP=80)
    queue = app.extensions["amp_dojo_queue"]
    honest = app.test_client()
    first = submit(honest).get_json()
    assert first["position"] == 1 and queue.pending_count() == 1
    attacker = app.test_client()
    for _ in range(25):
        response = submit(attacker, BIG)
        assert response.status_code == 202, response.get_json()
        cancel(attacker, response.get_json()["id"])
    assert queue.pending_count() == 1  # the honest one only: every cancelled task left the queue
    later = submit(app.test_client()).get_json()
    assert later["position"] == 2 and queue.pending_count() == 2
    assert honest.get(f"/api/submissions/{first['id']}").get_json()["position"] == 1
    waiting = [task.args[0]["submission_id"] for task in queue.huey.pending()]
    assert waiting == [first["id"], later["id"]]  # what a worker finds: the honest tasks, nothing cancelled


@pytest.mark.parametrize(
    "cap, words",
    [
        ("QUEUE_MAX", "The grading queue is full"),
        ("MAX_WAITING_PER_LEARNER", "of your submissions is still waiting"),
        ("MAX_WAITING_PER_IP", "from your network address are waiting"),
    ],
)
def test_a_cancelled_task_the_queue_could_not_take_back_counts_toward_each_cap_until_the_collector_does(
    make_app, monkeypatch, cap, words
):
    app = make_app(**{cap: 1})
    queue = app.extensions["amp_dojo_queue"]
    client = app.test_client()
    sid = submit(client).get_json()["id"]

    def down(*_args):
        raise ConnectionError("queue down")

    monkeypatch.setattr(queue, "withdraw", down)
    cancel(client, sid)
    assert queue.pending_count() == 1 and row(app, sid)["enqueued_at"] is not None
    # the task is still in the queue: it counts, though the status says cancelled
    next_client = client if cap == "MAX_WAITING_PER_LEARNER" else app.test_client()
    refused = submit(next_client)
    assert refused.status_code == 429 and words in refused.get_json()["error"]
    background_pass(app)  # still down: nothing changes
    assert queue.pending_count() == 1
    monkeypatch.undo()
    background_pass(app)
    assert queue.pending_count() == 0 and row(app, sid)["enqueued_at"] is None
    assert submit(next_client).status_code == 202 and queue.pending_count() == 1


def test_a_task_a_worker_took_before_the_cancel_is_skipped_and_frees_the_place(app):
    queue = app.extensions["amp_dojo_queue"]
    client = app.test_client()
    sid = submit(client).get_json()["id"]
    task = queue.huey.dequeue()  # a worker takes it, and has not claimed it yet
    cancel(client, sid)
    assert row(app, sid)["enqueued_at"] is None  # not in the queue any more: no place held
    queue.huey.execute(task)  # the worker sees the cancellation and grades nothing
    assert queue.peek("claim", sid, 1) is not None and queue.peek("result", sid, 1) is None
    assert queue.peek("cancel", sid, 1) is None and queue.peek("task", sid, 1) is None


class Reads:
    """Counts what the queue deserializes (tasks and values) and, on SQLite, the steps of SQLite's virtual
    machine: the costs of reading it that would grow with its length."""

    def __init__(self, queue, monkeypatch):
        self.count = self.steps = 0
        serializer = queue.huey.serializer
        deserialize = serializer.deserialize

        def counted(data):
            self.count += 1
            return deserialize(data)

        monkeypatch.setattr(serializer, "deserialize", counted)
        self.conn = queue.huey.storage.conn if hasattr(queue.huey.storage, "sql") else None

    def step(self) -> int:
        self.steps += 1
        return 0

    def __enter__(self):
        if self.conn is not None:
            self.conn.set_progress_handler(self.step, 1)
        return self

    def __exit__(self, *_exc):
        if self.conn is not None:
            self.conn.set_progress_handler(None, 1)


def _enqueue_others(queue, n):
    for i in range(n):
        queue.enqueue({"submission_id": f"other{i}", "attempt": 1, "exercise_id": "autocast", "code": BIG})


def test_asking_whether_a_task_still_waits_reads_the_same_however_long_the_queue(make_app, queue_url, monkeypatch):
    app = make_app(QUEUE_URL=queue_url)
    queue = app.extensions["amp_dojo_queue"]
    sid = submit(app.test_client()).get_json()["id"]
    reads = []
    for more in (0, 40):
        _enqueue_others(queue, more)
        with Reads(queue, monkeypatch) as counted:
            assert queue.is_pending(sid, 1)
        reads.append((counted.count, counted.steps))
        monkeypatch.undo()
    assert reads[0] == reads[1] and reads[0][0] <= 2
    assert queue.huey.dequeue() is not None and not queue.is_pending(sid, 1)  # taken by a worker


def test_a_poll_or_a_stream_never_asks_the_queue_about_lost_tasks(make_app, monkeypatch):
    app = make_app(LEASE_SECONDS=0.2, STREAM_SECONDS=1, STREAM_IDLE_SECONDS=1)
    queue = app.extensions["amp_dojo_queue"]
    client = app.test_client()
    sid = submit(client).get_json()["id"]
    assert queue.huey.dequeue() is not None  # a worker took the task and died before its first heartbeat
    asked = []
    is_pending = queue.is_pending
    monkeypatch.setattr(queue, "is_pending", lambda *a: asked.append(a) or is_pending(*a))
    for _ in range(3):
        time.sleep(0.25)
        assert client.get(f"/api/submissions/{sid}").get_json()["status"] == "queued"
    client.get(f"/api/submissions/{sid}/stream").get_data()
    assert not asked and row(app, sid)["attempt"] == 1
    for _ in range(3):  # the background collector finds it lost, and grades it again
        background_pass(app)
        time.sleep(0.25)
    assert asked and row(app, sid)["attempt"] == 2 and queue.is_pending(sid, 2)


def test_a_cancelled_runs_code_is_dropped_and_its_size_still_counts(app):
    client = app.test_client()
    sid = submit(client, BIG).get_json()["id"]
    client.get(f"/submissions/{sid}")  # its page, whose code view is kept
    cancel(client, sid)
    r = row(app, sid)
    assert r["code"] == "" and r["code_bytes"] == len(BIG.encode())
    assert client.get(f"/api/submissions/{sid}").get_json()["code"] is None  # the editor says it cannot load it
    db = connect(app.config["DATABASE"])
    try:
        assert db.execute("SELECT count(*) FROM code_views WHERE submission_id = ?", (sid,)).fetchone()[0] == 0
    finally:
        db.close()


def test_code_stored_a_day_is_bounded_per_learner_cancelled_runs_included(make_app):
    app = make_app(CODE_BYTES_PER_LEARNER_DAY=200_000, CODE_BYTES_PER_IP_DAY=0)
    client = app.test_client()
    for _ in range(3):  # 3 x 60 kB fit under 200 kB
        response = submit(client, BIG)
        assert response.status_code == 202
        cancel(client, response.get_json()["id"])
    refused = submit(client, BIG, lang="it")
    assert refused.status_code == 429
    assert refused.get_json()["error"].startswith("Hai inviato 0,2 MB di codice nelle ultime 24 ore")
    assert 23 * 3600 < int(refused.headers["Retry-After"]) <= 24 * 3600  # when the first of them is a day old
    assert submit(client, "x = 1\n").status_code == 202  # small code still fits under the limit
    assert submit(app.test_client(), BIG).status_code == 202  # another learner has a day of their own


def test_code_stored_a_day_is_bounded_per_address_for_clients_that_shed_their_cookie(make_app):
    app = make_app(CODE_BYTES_PER_LEARNER_DAY=0, CODE_BYTES_PER_IP_DAY=200_000)
    for _ in range(3):
        fresh = app.test_client()  # a new anonymous learner each time, from the same address
        response = submit(fresh, BIG)
        assert response.status_code == 202
        cancel(fresh, response.get_json()["id"])
    refused = submit(app.test_client(), BIG)
    assert refused.status_code == 429 and refused.headers["Retry-After"]
    assert refused.get_json()["error"].startswith("Your network address sent 0.2 MB of code in the last 24 hours")


def test_the_default_code_limits_fit_a_class_of_sixty_behind_one_address():
    """A learner's busy day: 200 runs of a lesson's usual 5 kB; a class of 60 of them shares one NAT address,
    which still stores less than 60 learners each at their own limit could."""
    day = 200 * 5000
    assert day <= defaults.CODE_BYTES_PER_LEARNER_DAY and 60 * day <= defaults.CODE_BYTES_PER_IP_DAY
    assert defaults.CODE_BYTES_PER_IP_DAY < 60 * defaults.CODE_BYTES_PER_LEARNER_DAY

"""`amp-dojo backup` and `amp-dojo restore` (webapp/backups.py): a backup taken while submissions are stored and
graded restores into a fresh instance with every submission and result it saw, the attempts under way queued
again; a restore refuses an instance that holds anything; an older backup is migrated up. On SQLite and on
PostgreSQL (the `database` fixture), through the CLI as an admin runs it."""

import json
import threading
import time

import pytest
from click.testing import CliRunner
from webapp_testing import base_config

from webapp import create_app, store
from webapp.cli import main
from webapp.collector import accept
from webapp.db import connect, current_revision, dispose, head_revision, transaction
from webapp.dispatch import dispatch

RESULT = {
    "status": "pass",
    "score": 1.0,
    "checks": [
        {
            "id": "call_order",
            "status": "pass",
            "message": "",
            "measured": {},
            "threshold": None,
            "weight": 1.0,
            "findings": [],
        }
    ],
    "output": "",
    "plots": {},
    "error": None,
}
SECRET = "never-in-a-backup-0123456789"
UNBOUNDED = {"RATE_LIMIT": 0, "IP_RATE_LIMIT": 0, "CODE_BYTES_PER_LEARNER_DAY": 0, "CODE_BYTES_PER_IP_DAY": 0}


@pytest.fixture
def fresh_database(request, tmp_path, database):
    """A second, empty database of the same kind as `database`: the new instance."""
    if "://" not in database:
        yield str(tmp_path / "restored" / "app.sqlite3")
        return
    server = request.getfixturevalue("postgres")
    url = server.create_database()
    try:
        yield url
    finally:
        dispose(url)
        server.drop_database(url)


def settings_env(database: str, folder) -> dict:
    """The instance's settings as an admin's shell would give them to `amp-dojo`."""
    return {
        "AMP_DOJO_CONFIG": None,
        "AMP_DOJO_DATABASE": database,
        "AMP_DOJO_QUEUE_URL": f"sqlite:///{folder / 'queue.sqlite3'}",
        "AMP_DOJO_SECRET_KEY": SECRET,
    }


def amp_dojo(env: dict, *args: str):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


class Gradings(threading.Thread):
    """Stores and grades submissions through the app's own functions until stopped; every fifth is handed to the
    queue and left there, as one a worker has not finished. `created` and `graded` list them as they commit."""

    def __init__(self, app):
        super().__init__(daemon=True)
        self.app, self.stopped = app, threading.Event()
        self.created: list[str] = []
        self.graded: list[str] = []
        self.failure: BaseException | None = None

    def run(self):
        db, queue, config = connect(self.app.config["DATABASE"]), self.app.extensions["amp_dojo_queue"], self.app.config
        try:
            n = 0
            while not self.stopped.is_set() and n < 2000:
                under_way = n % 5 == 4
                learner = f"waiting-{n}" if under_way else f"learner-{n % 7}"
                row = store.create(
                    db,
                    learner=learner,
                    client_ip="10.0.0.1",
                    lesson="autocast",
                    code=f"x = {n}\n",
                    lang="en",
                    config=config,
                )
                self.created.append(row["id"])
                if under_way:
                    dispatch(db, queue, config, learner)
                else:
                    accept(db, row, [], {"status": "done", "result": RESULT, "worker": "w"}, config)
                    self.graded.append(row["id"])
                n += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure = exc
        finally:
            db.close()


def test_a_backup_taken_while_gradings_are_written_restores_every_submission_and_result(
    tmp_path, database, fresh_database
):
    source = create_app(base_config(tmp_path, DATABASE=database, **UNBOUNDED))
    writer = Gradings(source)
    writer.start()
    deadline = time.monotonic() + 30
    while len(writer.graded) < 40 and time.monotonic() < deadline and writer.is_alive():
        time.sleep(0.02)
    created_before, graded_before = list(writer.created), list(writer.graded)
    done = amp_dojo(settings_env(database, tmp_path), "backup", str(tmp_path / "backup"))
    graded_during = len(writer.graded)
    time.sleep(0.2)
    writer.stopped.set()
    writer.join(30)
    assert writer.failure is None, writer.failure
    assert done.exit_code == 0, done.output
    assert len(graded_before) >= 40 and len(writer.graded) > graded_during  # written before, during and after

    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert manifest["alembic_revision"] == head_revision() and manifest["secret_key"]["copied"] is False
    assert not any(SECRET.encode() in file.read_bytes() for file in (tmp_path / "backup").iterdir())

    target_folder = tmp_path / "restored"
    target_folder.mkdir(exist_ok=True)
    target = create_app(base_config(target_folder, DATABASE=fresh_database))  # `init-db` made it: empty tables
    target_env = settings_env(fresh_database, target_folder)
    restored = amp_dojo(target_env, "restore", str(tmp_path / "backup"))
    assert restored.exit_code == 0, restored.output

    with connect(fresh_database) as db:
        rows = {row["id"]: row for row in db.execute("SELECT * FROM submissions").fetchall()}
        assert current_revision(db) == head_revision()
    assert set(created_before) <= set(rows)
    assert set(rows) == set(writer.created[: len(rows)])  # one snapshot: what came first, nothing after a gap
    for sid in graded_before:
        assert rows[sid]["status"] == "done" and json.loads(rows[sid]["result"])["status"] == "pass"
    under_way = [sid for sid, row in rows.items() if row["status"] != "done"]
    assert under_way and all(rows[sid]["status"] == "queued" for sid in under_way)
    # each submission the backup saw handed over, and never graded, waits in the new queue
    handed_over = [sid for sid in under_way if rows[sid]["enqueued_at"] is not None]
    assert handed_over and target.extensions["amp_dojo_queue"].pending_count() == len(handed_over)


def test_a_restore_over_an_instance_that_holds_anything_refuses(tmp_path, database, fresh_database):
    source = create_app(base_config(tmp_path, DATABASE=database, **UNBOUNDED))
    with connect(database) as db:
        store.create(
            db, learner="a", client_ip=None, lesson="autocast", code="x = 1\n", lang="en", config=source.config
        )
    assert amp_dojo(settings_env(database, tmp_path), "backup", str(tmp_path / "backup")).exit_code == 0

    target_folder = tmp_path / "restored"
    target_folder.mkdir(exist_ok=True)
    target = create_app(base_config(target_folder, DATABASE=fresh_database))
    with connect(fresh_database) as db:
        store.create(
            db, learner="b", client_ip=None, lesson="autocast", code="y = 2\n", lang="en", config=target.config
        )
    refused = amp_dojo(settings_env(fresh_database, target_folder), "restore", str(tmp_path / "backup"))
    assert refused.exit_code != 0 and "not empty" in refused.output and "submissions" in refused.output
    with connect(fresh_database) as db:  # untouched
        assert [r["learner"] for r in db.execute("SELECT learner FROM submissions").fetchall()] == ["b"]


def test_a_backup_folder_that_already_holds_files_is_refused(tmp_path):
    create_app(base_config(tmp_path))
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "other").write_text("someone's")
    done = amp_dojo(settings_env(str(tmp_path / "app.sqlite3"), tmp_path), "backup", str(tmp_path / "backup"))
    assert done.exit_code != 0 and "not an empty folder" in done.output


def test_a_backup_of_an_older_schema_is_migrated_up_on_restore(tmp_path):
    from alembic import command

    from webapp.db import _alembic_config

    old = str(tmp_path / "old.sqlite3")
    config = _alembic_config()
    with connect(old) as db, transaction(db):
        config.attributes["connection"] = db.connection
        command.upgrade(config, "0005")
    with connect(old) as db:
        db.execute(
            "INSERT INTO submissions (id, learner, lesson, code, status, attempt, created_at, queued_at, result) "
            "VALUES ('s1', 'l1', 'autocast', 'x = 1', 'done', 1, 1.0, 1.0, ?)",
            (json.dumps(RESULT),),
        )
    assert amp_dojo(settings_env(old, tmp_path), "backup", str(tmp_path / "backup")).exit_code == 0
    new = str(tmp_path / "new" / "app.sqlite3")
    restored = amp_dojo(settings_env(new, tmp_path / "new"), "restore", str(tmp_path / "backup"))
    assert restored.exit_code == 0, restored.output
    assert "schema 0005, now " + head_revision() in restored.output
    with connect(new) as db:
        assert current_revision(db) == head_revision()
        row = db.execute("SELECT code, code_bytes FROM submissions WHERE id = 's1'").fetchone()
        assert tuple(row) == ("x = 1", None)  # the learner's code kept, in a schema with 0006's column

"""The schema is kept by Alembic: a database made by the version before
migrations (tests/fixtures/schema_before_migrations.sql, that version's
schema.sql) is upgraded in place with nothing lost, and migrating from several
processes at once is safe."""

import json
import sqlite3
import threading
from pathlib import Path

from webapp_testing import base_config

from webapp import create_app
from webapp.db import connect, current_revision, head_revision, init_db

OLD_SCHEMA = (Path(__file__).resolve().parents[1] / "fixtures" / "schema_before_migrations.sql").read_text()
RESULT = {
    "status": "fail",
    "score": 0.5,
    "checks": [
        {
            "id": "call_order",
            "status": "fail",
            "findings": [
                {
                    "id": "clip_without_unscale",
                    "message": "clipped before unscale_",
                    "fix": "unscale first",
                    "line": 14,
                    "severity": "error",
                },
                {
                    "id": "deprecated_api",
                    "message": "old spelling",
                    "fix": "new spelling",
                    "line": 3,
                    "severity": "info",
                },
            ],
        },
        {"id": "parity", "status": "pass", "findings": []},
    ],
}


def old_database(path: Path) -> None:
    """What the previous version left in instance/: a graded submission with its events, and a queued one."""
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "INSERT INTO submissions (id, learner, client_ip, lesson, code, lang, status, attempt, created_at, "
        "queued_at, enqueued_at, started_at, finished_at, result, result_status, score, graded_by) VALUES "
        "('aa11', 'anon-1', '10.0.0.7', 'grad_scaler', 'print(1)', 'it', 'done', 1, 100.5, 100.5, 100.6, "
        "101.0, 130.25, ?, 'fail', 0.5, 'host:1')",
        (json.dumps(RESULT),),
    )
    db.execute(
        "INSERT INTO submissions (id, learner, lesson, code, status, created_at, queued_at) VALUES "
        "('bb22', 'anon-1', 'autocast', 'x = 1', 'queued', 200.0, 200.0)"
    )
    for n, (source, kind) in enumerate([("queued", "progress"), ("w:0", "progress"), ("done", "done")]):
        db.execute(
            "INSERT INTO events (submission_id, attempt, source, type, data, created_at) VALUES "
            "('aa11', 1, ?, ?, ?, ?)",
            (source, kind, json.dumps({"n": n}), 100.0 + n),
        )
    db.commit()
    db.close()


OLD_COLUMNS = {
    "submissions": "id, learner, client_ip, lesson, code, lang, status, attempt, created_at, queued_at, "
    "enqueued_at, started_at, finished_at, hb_value, hb_seen_at, result, result_status, score, graded_by, error",
    "events": "*",
}


def dump(path: Path) -> dict:
    """The tables' rows, in the columns the version before migrations had (later ones add columns)."""
    db = sqlite3.connect(path)
    try:
        return {
            table: db.execute(f"SELECT {columns} FROM {table} ORDER BY 1").fetchall()
            for table, columns in OLD_COLUMNS.items()
        }
    finally:
        db.close()


def test_a_database_of_the_version_before_migrations_is_upgraded_in_place_with_nothing_lost(tmp_path):
    path = tmp_path / "instance" / "amp_dojo.sqlite3"
    path.parent.mkdir()
    old_database(path)
    before = dump(path)
    app = create_app(base_config(tmp_path, DATABASE=str(path)))
    assert dump(path) == before
    db = connect(str(path))
    try:
        assert current_revision(db) == head_revision()
        found = db.execute("SELECT submission_id, check_id, finding_id, line FROM findings").fetchall()
        assert [tuple(r) for r in found] == [("aa11", "call_order", "clip_without_unscale", 14)]  # not the info one
        records = db.execute(
            "SELECT lesson, attempts, best_score, passed_at FROM learner_lessons "
            "WHERE learner = 'anon-1' ORDER BY lesson"
        ).fetchall()
        assert [tuple(r) for r in records] == [("autocast", 1, None, None), ("grad_scaler", 1, 0.5, None)]
    finally:
        db.close()
    client = app.test_client()  # the learner's old cookie still finds their work
    with client.session_transaction() as session:
        session["learner"] = "anon-1"
    detail = client.get("/api/submissions/aa11").get_json()
    result = detail["result"]  # served worded in the page's language, from the stored document
    assert (result["status"], result["score"]) == ("fail", 0.5)
    assert [f["id"] for f in result["checks"][0]["findings"]] == ["clip_without_unscale", "deprecated_api"]
    assert [e["data"]["n"] for e in detail["events"]] == [0, 1, 2]
    assert {c["id"]: c["progress"] for c in client.get("/api/lessons").get_json()["lessons"]}[
        "grad_scaler"
    ] == "attempted"
    create_app(base_config(tmp_path, DATABASE=str(path)))  # a second start changes nothing
    assert dump(path) == before


def test_several_processes_migrating_one_new_database_at_once_all_end_at_the_newest_schema(database):
    errors, revisions = [], []

    def migrate():
        db = connect(database)
        try:
            revisions.append(init_db(db))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=migrate) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and revisions == [head_revision()] * 4
    db = connect(database)
    try:
        assert db.execute("SELECT count(*) FROM alembic_version").fetchone()[0] == 1
    finally:
        db.close()


def test_accounts_made_before_look_alike_names_were_refused_keep_signing_in_and_hold_their_names(tmp_path):
    """0004 fills in every account's skeleton; where two already look alike, both keep working and no third
    may take the look-alike name."""
    from alembic import command
    from webapp_testing import PASSWORD, form, signin
    from werkzeug.security import generate_password_hash

    from webapp import db as webapp_db

    path = tmp_path / "app.sqlite3"
    db = connect(str(path))
    try:
        config = webapp_db._alembic_config()
        with webapp_db.transaction(db):
            config.attributes["connection"] = db.connection
            command.upgrade(config, "0002")
        password_hash = generate_password_hash(PASSWORD)
        for n, name in enumerate(["admin", "adm1n", "Grace.H"]):
            db.execute(
                "INSERT INTO users (username, username_key, password_hash, role, learner, session_token, "
                "created_at) VALUES (?, ?, ?, 'learner', ?, ?, 0)",
                (name, name.casefold(), password_hash, f"l{n}", f"t{n}"),
            )
    finally:
        db.close()
    app = create_app(base_config(tmp_path, DATABASE=str(path)))
    db = connect(str(path))
    try:
        skeletons = dict(db.execute("SELECT username, username_skeleton FROM users").rows())
    finally:
        db.close()
    assert skeletons["admin"] == "admln" and skeletons["adm1n"].startswith("admln#")
    assert skeletons["Grace.H"] == "graceh"
    for name in ("admin", "adm1n", "grace.h"):
        assert signin(app.test_client(), name).status_code == 303
    for name in ("ADMlN", "grace_h"):
        refused = form(app.test_client(), "/signup", {"username": name, "password": PASSWORD, "password2": PASSWORD})
        assert refused.status_code == 400

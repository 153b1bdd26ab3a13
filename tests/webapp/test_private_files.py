"""The host's files are the grader's alone: the instance folder is 0700 and every file the app and its workers
keep in it (the database and its -wal/-shm files, the SQLite queue, the secret key) 0600, whatever the umask,
when they are made (by the app, its migrations, Huey) and when an older installation left them readable."""

import os
import stat

import pytest
from flask import Flask
from webapp_testing import base_config, csrf_headers

from webapp import create_app, load_settings, make_queue


@pytest.fixture
def instance(tmp_path, monkeypatch):
    """The app's instance folder, under tmp_path, with the umask most systems have (files 0644 by default)."""
    folder = tmp_path / "instance"
    monkeypatch.setattr(Flask, "auto_find_instance_path", lambda self: str(folder))
    old = os.umask(0o022)
    yield folder
    os.umask(old)


def defaults(tmp_path) -> dict:
    """The test settings, but the database, queue and secret key where a deployment keeps them: the instance."""
    return base_config(tmp_path, DATABASE=None, QUEUE_URL=None, SECRET_KEY=None)


def modes(folder) -> dict:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}


def test_the_instance_folder_and_every_file_the_app_makes_in_it_are_the_owners_alone(tmp_path, instance):
    app = create_app(defaults(tmp_path))
    client = app.test_client()
    response = client.post("/api/lessons/autocast/submissions", json={"code": "x = 1"}, headers=csrf_headers(client))
    assert response.status_code == 202  # the database and the queue have been written (and their -wal files)
    assert stat.S_IMODE(instance.stat().st_mode) == 0o700
    found = modes(instance)
    assert {"amp_dojo.sqlite3", "queue.sqlite3", "secret_key"} <= set(found)
    assert found == {name: 0o600 for name in found}, found


def test_a_worker_started_alone_makes_its_queue_file_private(tmp_path, instance):
    queue = make_queue(load_settings(defaults(tmp_path)).config, grading=True)
    try:
        queue.put("hb", "abc", 1, {"beat": 1})
        assert stat.S_IMODE(instance.stat().st_mode) == 0o700
        found = modes(instance)
        assert "queue.sqlite3" in found and found == {name: 0o600 for name in found}, found
    finally:
        queue.close()


def test_an_older_installations_readable_files_are_narrowed_at_start(tmp_path, instance):
    create_app(defaults(tmp_path))
    from webapp.db import dispose

    dispose(str(instance / "amp_dojo.sqlite3"))
    instance.chmod(0o755)
    for name in ("amp_dojo.sqlite3", "queue.sqlite3"):
        (instance / name).chmod(0o644)
    (instance / "amp_dojo.sqlite3-wal").write_bytes(b"")
    (instance / "amp_dojo.sqlite3-wal").chmod(0o644)
    create_app(defaults(tmp_path))
    assert stat.S_IMODE(instance.stat().st_mode) == 0o700
    found = modes(instance)
    assert found == {name: 0o600 for name in found}, found


def test_a_database_elsewhere_gets_a_private_file_and_a_new_folder_for_it_is_private(tmp_path, instance):
    database = tmp_path / "srv" / "dojo" / "app.sqlite3"
    create_app(base_config(tmp_path, DATABASE=str(database)))
    assert stat.S_IMODE(database.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(database.stat().st_mode) == 0o600

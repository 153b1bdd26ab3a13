"""Settings: defaults, a config file, AMP_DOJO_* variables, the instance secret."""

import stat

from webapp import create_app, load_settings


def test_defaults_are_safe(tmp_path, monkeypatch):
    monkeypatch.delenv("AMP_DOJO_CONFIG", raising=False)
    config = load_settings({"DATABASE": None}).config
    assert config["SANDBOX"] == "auto" and config["ALLOW_LOCAL_SANDBOX"] is False
    assert config["MAX_CODE_BYTES"] == 65536 and config["MAX_ATTEMPTS"] == 2
    assert config["QUEUE_URL"].startswith("sqlite:///") and config["DATABASE"].endswith("amp_dojo.sqlite3")


def test_config_file_then_environment_override_defaults(tmp_path, monkeypatch):
    settings = tmp_path / "settings.py"
    settings.write_text(f"RATE_LIMIT = 3\nQUEUE_MAX = 7\nDATABASE = {str(tmp_path / 'x.sqlite3')!r}\n")
    monkeypatch.setenv("AMP_DOJO_CONFIG", str(settings))
    monkeypatch.setenv("AMP_DOJO_QUEUE_MAX", "9")
    monkeypatch.setenv("AMP_DOJO_ALLOW_LOCAL_SANDBOX", "true")
    monkeypatch.setenv("AMP_DOJO_QUEUE_URL", f"sqlite:///{tmp_path / 'q.sqlite3'}")
    config = load_settings().config
    assert (config["RATE_LIMIT"], config["QUEUE_MAX"], config["ALLOW_LOCAL_SANDBOX"]) == (3, 9, True)
    assert config["DATABASE"] == str(tmp_path / "x.sqlite3")


def test_secret_key_is_generated_once_into_the_instance_folder(tmp_path, monkeypatch):
    monkeypatch.setattr("flask.Flask.auto_find_instance_path", lambda self: str(tmp_path / "instance"))
    config = {"TESTING": True, "QUEUE_URL": f"sqlite:///{tmp_path / 'q.sqlite3'}"}
    first = create_app(dict(config)).config["SECRET_KEY"]
    key_file = tmp_path / "instance" / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(first) >= 32
    assert create_app(dict(config)).config["SECRET_KEY"] == first


def test_init_db_command_creates_the_tables(runner, app):
    result = runner.invoke(args=["init-db"])
    assert "Initialized the database" in result.output
    import sqlalchemy as sa

    from webapp.db import engine

    tables = set(sa.inspect(engine(app.config["DATABASE"])).get_table_names())
    assert {"submissions", "events"} <= tables

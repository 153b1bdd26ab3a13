"""Helpers shared by the web app tests and their fixtures (a unique module name:
`conftest` is ambiguous between tests/ and tests/webapp/)."""


def base_config(tmp_path, **overrides) -> dict:
    config = {
        "TESTING": True,
        "SECRET_KEY": "test",
        "DATABASE": str(tmp_path / "app.sqlite3"),
        "QUEUE_URL": f"sqlite:///{tmp_path / 'queue.sqlite3'}",
        "SANDBOX": "local",
        "ALLOW_LOCAL_SANDBOX": True,
        "DEVICE": "cpu",
        "STREAM_SECONDS": 5,
        "RATE_LIMIT": 100,
        "IP_RATE_LIMIT": 100,
        "MAX_WAITING_PER_LEARNER": 0,  # tests queue several submissions of one learner; its own test sets it
        "MAX_WAITING_PER_IP": 0,
    }
    config.update(overrides)
    return config


def csrf_headers(client) -> dict:
    """Headers for a state-changing request: the session's CSRF token."""
    return {"X-CSRF-Token": client.get("/api/session").get_json()["csrf_token"]}

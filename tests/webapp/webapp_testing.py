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
        "RATE_BURST": 100,
        "IP_RATE_LIMIT": 100,
        "MAX_WAITING_PER_LEARNER": 0,  # tests queue several submissions of one learner; its own test sets it
        "MAX_WAITING_PER_IP": 0,
        "MAX_STREAMS_PER_IP": 0,  # every test client has one address; the cap's own test sets it
        "QUEUE_TURNS_PER_IP": 0,  # the same
    }
    config.update(overrides)
    return config


def csrf_headers(client) -> dict:
    """Headers for a state-changing request: the session's CSRF token."""
    return {"X-CSRF-Token": client.get("/api/session").get_json()["csrf_token"]}


PASSWORD = "correct-horse-battery"


def form(client, url: str, data: dict, **kwargs):
    """POSTs a form as the page would: with the session's CSRF token in a hidden field."""
    token = csrf_headers(client)["X-CSRF-Token"]
    return client.post(url, data={"csrf_token": token, **data}, **kwargs)


def signup(client, username: str, password: str = PASSWORD):
    response = form(client, "/signup", {"username": username, "password": password, "password2": password})
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    return response


def signin(client, username: str, password: str = PASSWORD, **kwargs):
    return form(client, "/signin", {"username": username, "password": password}, **kwargs)


def make_instructor(app, username: str, password: str = PASSWORD):
    from webapp import accounts
    from webapp.db import connect

    db = connect(app.config["DATABASE"])
    try:
        return accounts.create(db, username, password, role="instructor")
    finally:
        db.close()


def grade_as(app, sid: str, status: str, findings: list[dict] = (), score: float | None = None):
    """Writes a result for a submission's first attempt into the queue's storage, as a grading worker
    would (a scripted verdict instead of a grading: the web app's side is what is tested), and collects it."""
    from webapp.collector import collect
    from webapp.db import connect

    queue = app.extensions["amp_dojo_queue"]
    assert queue.claim(sid, 1, "scripted")
    checks = [
        {
            "id": "call_order",
            "status": "fail" if findings else "pass",
            "message": "",
            "measured": {},
            "threshold": None,
            "weight": 1.0,
            "findings": list(findings),
        }
    ]
    result = {
        "status": status,
        "score": score if score is not None else (1.0 if status == "pass" else 0.5),
        "checks": checks,
        "output": "",
        "plots": {},
        "error": None,
    }
    queue.put("result", sid, 1, {"status": "done", "result": result, "worker": "scripted", "attempt": 1})
    db = connect(app.config["DATABASE"])
    try:
        collect(db, queue, app.config, [sid])
    finally:
        db.close()


def finding(finding_id: str, line: int | None = None, message: str = "a mistake") -> dict:
    return {"id": finding_id, "message": message, "fix": "fix it", "line": line, "severity": "error"}

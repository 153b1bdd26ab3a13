"""`grader login`, `grader submit`, `grader check --submit` and `%%grade --submit` against a real server on
loopback: the web app in a thread of this process (werkzeug's server, a free port), a worker thread grading from
its queue with the local sandbox, and the grader CLI in a subprocess, as a learner's terminal would run it. The submission is the account's: its browser
session reads it through the API. Every thread and loop here is bounded and stopped by the test."""

import json
import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from webapp_testing import base_config, form, signup
from werkzeug.serving import make_server

from grader.lesson.loader import load_exercise
from webapp import create_app

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path):
    """(app, base URL): the app served on 127.0.0.1 with a grading worker beside it."""
    app = create_app(base_config(tmp_path))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    stop = threading.Event()

    def work():
        while not stop.is_set():
            app.extensions["amp_dojo_queue"].run_pending()
            stop.wait(0.2)

    threads = [threading.Thread(target=server.serve_forever, daemon=True), threading.Thread(target=work, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield app, f"http://127.0.0.1:{server.server_port}"
    finally:
        stop.set()
        server.shutdown()
        for thread in threads:
            thread.join(timeout=120)


def grader(tmp_path, *args, stdin: str = "", timeout: float = 300):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "AMP_DOJO_LANG": "en", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "grader", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def make_token(client) -> str:
    page = form(client, "/account/tokens", {"name": "terminal"}).get_data(as_text=True)
    return re.search(r'data-testid="token-secret">(ampd_[\w-]+)<', page).group(1)


def test_grader_submit_from_a_terminal_prints_the_servers_verdict_and_the_account_has_the_submission(served, tmp_path):
    app, url = served
    ada = app.test_client()
    signup(ada, "ada")
    token = make_token(ada)
    logged = grader(tmp_path, "login", url, "--token-stdin", stdin=token + "\n")
    assert logged.returncode == 0, logged.stderr
    assert "as ada" in logged.stdout
    kept = tmp_path / "config" / "amp-dojo" / "credentials.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and json.loads(kept.read_text())["token"] == token
    solution = tmp_path / "autocast.py"
    solution.write_text(load_exercise("autocast").reference)
    sent = grader(tmp_path, "submit", "autocast", str(solution), "--wait", "240")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "autocast.py" in sent.stdout and "PASS" in sent.stdout.upper()
    mine = ada.get("/api/lessons/autocast/submissions").get_json()["submissions"]
    assert len(mine) == 1 and mine[0]["status"] == "done"
    assert ada.get(f"/api/submissions/{mine[0]['id']}").get_json()["result"]["status"] == "pass"
    lessons = {lesson["id"]: lesson["progress"] for lesson in ada.get("/api/lessons").get_json()["lessons"]}
    assert lessons["autocast"] == "passed"


def test_a_revoked_token_is_a_clear_error_and_logout_forgets_the_login(served, tmp_path):
    app, url = served
    ada = app.test_client()
    signup(ada, "ada")
    token = make_token(ada)
    assert grader(tmp_path, "login", url, "--token-stdin", stdin=token).returncode == 0
    token_id = re.search(r'data-token-id="(\d+)"', ada.get("/account/tokens").get_data(as_text=True)).group(1)
    assert form(ada, f"/account/tokens/{token_id}/revoke", {}).status_code == 303
    solution = tmp_path / "autocast.py"
    solution.write_text("x = 1\n")
    refused = grader(tmp_path, "submit", "autocast", str(solution), "--lang", "it")
    assert refused.returncode == 2 and "401" in refused.stderr and "revocato" in refused.stderr
    assert grader(tmp_path, "login", url, "--token-stdin", stdin="ampd_wrong").returncode == 2
    assert grader(tmp_path, "logout").stdout.startswith("Logged out")
    gone = grader(tmp_path, "submit", "autocast", str(solution))
    assert gone.returncode == 2 and "grader login" in gone.stderr
    assert ada.get("/api/lessons/autocast/submissions").get_json()["submissions"] == []


SYNTAX_ERROR = "def train_step(model, batch:\n    return 0\n"


def test_check_submit_grades_here_then_on_the_server_and_exits_with_the_worse_verdict(served, tmp_path):
    app, url = served
    ada = app.test_client()
    signup(ada, "ada")
    broken = tmp_path / "broken.py"
    broken.write_text(SYNTAX_ERROR)
    refused = grader(tmp_path, "check", "autocast", str(broken), "--submit")
    assert refused.returncode == 2 and "grader login" in refused.stderr  # said before anything is graded
    assert grader(tmp_path, "login", url, "--token-stdin", stdin=make_token(ada)).returncode == 0
    both = grader(tmp_path, "check", "autocast", str(broken), "--submit", "--sandbox", "local")
    assert both.returncode == 1, both.stdout + both.stderr
    assert both.stdout.count("broken.py: autocast on") == 2, both.stdout  # the local report, then the server's
    assert "The server's verdict" in both.stdout and "Submitted as" in both.stderr
    [mine] = ada.get("/api/lessons/autocast/submissions").get_json()["submissions"]
    assert ada.get(f"/api/submissions/{mine['id']}").get_json()["result"]["status"] == "error"


def test_grade_submit_in_jupyter_shows_the_servers_verdict_and_the_account_has_it(served, tmp_path, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from grader import remote

    app, url = served
    ada = app.test_client()
    signup(ada, "ada")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    remote.save(remote.Login(url, make_token(ada)))
    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "amp_dojo")
        with capture_output() as shown:
            shell.run_cell_magic("grade", "autocast --submit --sandbox local --lang it", SYNTAX_ERROR)
    finally:
        InteractiveShell.clear_instance()
    html = [o.data["text/html"] for o in shown.outputs if "text/html" in o.data]
    [mine] = ada.get("/api/lessons/autocast/submissions").get_json()["submissions"]
    assert any(f"/submissions/{mine['id']}" in h and "Il verdetto del server" in h for h in html), html
    assert ada.get(f"/api/submissions/{mine['id']}").get_json()["result"]["status"] == "error"


def test_a_server_address_is_checked_and_plain_http_is_flagged_beyond_this_machine():
    from grader import remote

    assert remote.server_root("https://dojo.example.org/") == "https://dojo.example.org"
    assert remote.in_the_clear("http://dojo.example.org") and not remote.in_the_clear("http://127.0.0.1:8000")
    assert not remote.in_the_clear("https://dojo.example.org")
    with pytest.raises(remote.GraderError):
        remote.server_root("dojo.example.org")

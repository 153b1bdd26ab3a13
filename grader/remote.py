"""The grader's side of an AMP Dojo server: `grader login` keeps a server's address and a personal access token,
`grader submit` (and `%%grade --submit`) sends code there and follows the grading until its verdict. The server
grades; this only carries the code and the result document, with the standard library's urllib (no HTTP
dependency) and the token in an `Authorization: Bearer` header (docs/api.md).

The credentials live in the user's config folder (click.get_app_dir: $XDG_CONFIG_HOME/amp-dojo on Linux), in
a file only its owner can read (0600), as a password manager would keep them."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import click

from grader.errors import GraderError

CREDENTIALS = "credentials.json"
TIMEOUT_S = 30.0  # one request
TUTOR_TIMEOUT_S = 180.0  # silence on the tutor's stream (the server bounds the whole answer itself)
POLL_S = 1.0
DONE = ("done", "error")


@dataclass
class Login:
    url: str  # the server's root, without a trailing slash
    token: str


class Received:
    """The server's result document where a report wants a GradingResult: the terminal's report and the
    notebook's HTML read a verdict only through to_dict(), so both show the server's verdict unchanged."""

    def __init__(self, document: dict):
        self.document = document

    def to_dict(self) -> dict:
        return self.document


def credentials_file() -> Path:
    return Path(click.get_app_dir("amp-dojo")) / CREDENTIALS


def saved() -> Login:
    """The stored login; a GraderError that says to log in when there is none."""
    path = credentials_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Login(data["url"], data["token"])
    except (OSError, ValueError, KeyError, TypeError):
        raise GraderError(
            "not logged in to a server: run `grader login URL` first (a token from its account page)"
        ) from None


def save(login: Login) -> Path:
    """Writes the login to a file made 0600 before the token is in it (never readable by others, even briefly)."""
    path = credentials_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file that existed keeps its old mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"url": login.url, "token": login.token}, fh)
    return path


def forget() -> bool:
    try:
        credentials_file().unlink()
        return True
    except FileNotFoundError:
        return False


def server_root(url: str) -> str:
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise GraderError(f"{url!r} is not a server address: give one like https://dojo.example.org")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def in_the_clear(root: str) -> bool:
    """Whether the token would cross a network unencrypted: plain HTTP to anything but this machine."""
    parts = urllib.parse.urlsplit(root)
    return parts.scheme == "http" and parts.hostname not in ("localhost", "127.0.0.1", "::1")


def _request(login: Login, method: str, path: str, lang: str, body: dict | None, accept: str) -> urllib.request.Request:
    data = None if body is None else json.dumps(body).encode("utf-8")
    sep = "&" if "?" in path else "?"
    return urllib.request.Request(
        f"{login.url}{path}{sep}lang={lang}",
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {login.token}",
            "Accept": accept,
            "Accept-Language": lang,
            **({"Content-Type": "application/json"} if data is not None else {}),
        },
    )


def call(login: Login, method: str, path: str, lang: str, body: dict | None = None) -> dict:
    """One API request with the token; the JSON answer, or a GraderError that carries the server's own words
    (in `lang`: a revoked or expired token, a rate limit, code too large)."""
    request = _request(login, method, path, lang, body, "application/json")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise GraderError(f"the server said {exc.code}: {_said(exc)}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise GraderError(f"could not reach {login.url}: {getattr(exc, 'reason', exc)}") from None


def ask(login: Login, sid: str, question: str, lang: str, hints_opened: int = 0):
    """The tutor's answer about one's own graded submission (`grader ask`), as the server streams it: (event,
    data) pairs, `delta` pieces of text, `replace` (the leak guard's reply instead), `error`, then `done`. The
    server bounds the answer's time; TUTOR_TIMEOUT_S only stops a connection that went silent."""
    path = f"/api/submissions/{urllib.parse.quote(sid, safe='')}/tutor"
    body = {"question": question, "hints_opened": hints_opened}
    request = _request(login, "POST", path, lang, body, "text/event-stream")
    try:
        with urllib.request.urlopen(request, timeout=TUTOR_TIMEOUT_S) as response:
            event = "message"
            for raw in response:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    yield event, json.loads(line[5:].strip())
    except urllib.error.HTTPError as exc:
        raise GraderError(f"the server said {exc.code}: {_said(exc)}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise GraderError(f"could not reach {login.url}: {getattr(exc, 'reason', exc)}") from None


def _said(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read().decode("utf-8"))["error"])
    except Exception:  # noqa: BLE001 - a proxy's HTML page, an empty body: say the status alone
        return exc.reason or "no reason given"


def whoami(login: Login, lang: str) -> dict:
    return call(login, "GET", "/api/me", lang)


def submit(login: Login, lesson: str, code: str, lang: str) -> dict:
    """Sends the code; the server's answer (id, status, position, urls)."""
    return call(login, "POST", f"/api/lessons/{urllib.parse.quote(lesson, safe='')}/submissions", lang, {"code": code})


def verdict(answer: dict) -> dict:
    """The result document of a finished submission; a GraderError where the server graded none (cancelled, or
    the grading itself failed there)."""
    document = answer.get("result")
    if not document:
        raise GraderError(f"the server gave no verdict: {answer.get('error') or answer.get('status')}")
    return document


def wait_for(login: Login, sid: str, lang: str, wait_s: float, on_news=None) -> dict:
    """Polls the submission until it is done (or ended in an error), at most `wait_s` seconds; the last answer.
    `on_news(answer)` is told of each poll (a queue position, a stage) for a progress line."""
    deadline = time.monotonic() + wait_s
    path = f"/api/submissions/{urllib.parse.quote(sid, safe='')}"
    after = 0  # events already seen are not sent again
    while True:
        answer = call(login, "GET", f"{path}?after={after}", lang)
        if answer.get("status") in DONE:
            return answer
        after = max([after, *(e.get("id", 0) for e in answer.get("events") or [])])
        if on_news is not None:
            on_news(answer)
        if time.monotonic() + POLL_S > deadline:
            raise GraderError(
                f"no verdict within {wait_s:.0f} s; the server is still grading it: see {login.url}/submissions/{sid}"
            )
        time.sleep(POLL_S)

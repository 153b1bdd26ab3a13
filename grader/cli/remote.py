"""The commands that talk to an AMP Dojo server (grader/remote.py): log in with a personal access token, log
out, and submit a file there, so that the terminal's work counts on the learner's web page and courses."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from grader import remote
from grader.cli.options import EXISTING_FILE, LANG
from grader.errors import GraderError
from grader.lesson.loader import load_exercise
from grader.results import PASS
from grader.wording import report
from grader.wording.phrases import phrase

WAIT = click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(1, 3600),
    default=600,
    show_default=True,
    help="seconds to wait for the server's verdict",
)


@click.command()
@click.argument("url")
@click.option("--token-stdin", is_flag=True, help="read the token from standard input (for scripts)")
@LANG
def login(url, token_stdin, lang):
    """Keep URL and a personal access token (made on your account page there) for `grader submit`."""
    root = remote.server_root(url)
    if remote.in_the_clear(root):
        click.echo(f"warning: {root} is plain HTTP: the token crosses the network unencrypted", err=True)
    if token_stdin:
        token = sys.stdin.readline().strip()
    else:
        token = click.prompt(f"Access token (make one at {root}/account)", hide_input=True).strip()
    if not token:
        raise GraderError("no token given")
    login = remote.Login(root, token)
    me = remote.whoami(login, lang)
    path = remote.save(login)
    click.echo(phrase("remote.logged_in", lang, url=root, user=me.get("username"), path=path))


@click.command()
@LANG
def logout(lang):
    """Forget the server and token that `grader login` kept (revoke the token on your account page too)."""
    click.echo(phrase("remote.logged_out" if remote.forget() else "remote.not_logged_in", lang))


@click.command()
@click.argument("exercise_id")
@click.argument("file", type=EXISTING_FILE)
@WAIT
@click.option("--color", "colour", type=click.Choice(report.COLOUR_MODES), default="auto", show_default=True)
@LANG
def submit(exercise_id, file, wait_s, colour, lang):
    """Send FILE to the server you logged in to: it grades it as your submission; the report is `grader check`'s."""
    sys.exit(send(exercise_id, file, wait_s, lang, report.console_for(sys.stdout, colour)))


def send(exercise_id: str, file: Path, wait_s: float, lang: str, out) -> int:
    """Submits FILE, waits for the verdict and prints its report; the exit code of `grader check`."""
    login = remote.saved()
    load_exercise(exercise_id)  # an unknown lesson is told here, before anything is sent
    source = file.read_text(encoding="utf-8", errors="replace")
    began = time.perf_counter()
    sent = remote.submit(login, exercise_id, source, lang)
    click.echo(phrase("remote.submitted", lang, id=sent["id"], url=f"{login.url}/submissions/{sent['id']}"), err=True)
    answer = remote.wait_for(login, sent["id"], lang, wait_s)
    return show_remote(answer, file, source, lang, out, time.perf_counter() - began)


@click.command()
@click.argument("exercise_id")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("question")
@WAIT
@LANG
def ask(exercise_id, file, question, wait_s, lang):
    """Ask the server's tutor QUESTION about FILE's verdict: FILE is submitted and graded there first (your
    submission, like `grader submit`), then the tutor answers from the grader's findings, never with the solution."""
    from grader.lesson import hints

    login = remote.saved()
    load_exercise(exercise_id)
    source = file.read_text(encoding="utf-8", errors="replace")
    sent = remote.submit(login, exercise_id, source, lang)
    click.echo(phrase("remote.submitted", lang, id=sent["id"], url=f"{login.url}/submissions/{sent['id']}"), err=True)
    remote.verdict(remote.wait_for(login, sent["id"], lang, wait_s))
    click.echo(phrase("remote.asking", lang), err=True)
    sys.exit(print_answer(remote.ask(login, sent["id"], question, lang, hints.seen(exercise_id))))


def print_answer(events) -> int:
    """Prints the tutor's answer as it streams; 0, or 1 where the tutor gave none (its message on stderr)."""
    for event, data in events:
        if event == "delta":
            click.echo(data.get("text", ""), nl=False)
        elif event == "replace":
            click.echo("\n\n" + data.get("text", ""), nl=False)
        elif event == "error":
            click.echo(data.get("message", ""), err=True)
            return 1
    click.echo()
    return 0


def show_remote(answer: dict, file: Path, source: str, lang: str, out, wall_s: float) -> int:
    document = remote.verdict(answer)
    report.print_report(out, remote.Received(document), report.Source(str(file), source), lang, wall_s=wall_s)
    return 0 if document.get("status") == PASS else 1

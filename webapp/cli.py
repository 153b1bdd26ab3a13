"""`amp-dojo`: serve the web app, run grading workers, or both.

    amp-dojo serve [--with-worker]   the web server (and one worker, for a single machine)
    amp-dojo run                     the same as `serve --with-worker`
    amp-dojo worker                  one grading worker: a Huey consumer with one thread
    amp-dojo init-db                 create or upgrade the database tables
    amp-dojo create-instructor NAME  an instructor account (password asked for, or --password-stdin)
    amp-dojo backup PATH             the database (while the app runs) and a manifest, into a new folder
    amp-dojo restore PATH            a backup into an empty instance, migrated up
    amp-dojo reset-password NAME     a one-time link that sets a new password for account NAME
    amp-dojo warm [LESSON...]        the lessons' trusted runs, computed into the workers' store ahead of time
    amp-dojo lti add-platform ...    register an LMS (LTI 1.3; also lti list, lti remove, lti rotate-key)
    amp-dojo regrade COURSE LESSON   grade a course lesson's submissions again, list who flips (--apply)

Settings come from AMP_DOJO_CONFIG and AMP_DOJO_* variables (docs/configuration.md)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import click

from grader.errors import EnvironmentProblem


def _app():
    from webapp import create_app

    return create_app()


def _logging(verbose: bool) -> None:
    """LOG_LEVEL and LOG_FORMAT (webapp/logs.py): a normal start says only the URL and real warnings."""
    from webapp import load_settings, logs

    try:
        logs.configure(load_settings().config, verbose)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def main():
    """AMP Dojo web app and grading workers."""


@main.command("init-db")
@click.option("-v", "--verbose", is_flag=True, help="say each migration as it runs")
def init_db(verbose):
    """Create or upgrade the database tables (idempotent)."""
    _logging(verbose)
    app = _app()
    from webapp.db import redacted

    click.echo(f"database ready at {redacted(app.config['DATABASE'])}")


@main.command("create-instructor")
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="read the password from the first line of standard input")
def create_instructor(name, password_stdin):
    """Create an instructor account NAME (the password is asked for, twice)."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    app = _app()
    from webapp import accounts
    from webapp.db import get_db

    with app.app_context():
        try:
            user = accounts.create(get_db(), name, password, role="instructor")
        except accounts.AccountError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"instructor {user.username} created; sign in at /signin")


# ---------- backup and restore (docs/operations.md) ----------


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
def backup(path):
    """Back up the database (while the app runs) into the new folder PATH, with a manifest of the rest."""
    from webapp import backups, load_settings

    settings = load_settings()
    try:
        manifest = backups.backup(settings.config, path, settings.instance_path)
    except backups.BackupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"backup of {manifest['database']['taken_from']} (schema {manifest['alembic_revision']}) written to {path}; "
        f"the secret key is not in it ({manifest['secret_key']['where']})"
    )


@main.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
def restore(path):
    """Restore the backup in PATH into this instance's empty database, then migrate it up."""
    from webapp import backups, load_settings

    try:
        done = backups.restore(load_settings().config, path)
    except backups.BackupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"restored {path} (schema {done['from']}, now {done['to']}); "
        f"{done['requeued']} submissions under way were queued again"
    )


@main.command("reset-password")
@click.argument("name")
def reset_password(name):
    """Print a one-time link that sets a new password for account NAME (any role). It works once, for
    PASSWORD_RESET_MAX_AGE_S, and dies when the password changes; on PUBLIC_URL where set."""
    app = _app()
    from webapp import accounts, passwords
    from webapp.db import get_db

    with app.test_request_context():  # url_for needs a request; the link's host is PUBLIC_URL or none
        db = get_db()
        user = accounts.by_username(db, name)
        if user is None:
            raise click.ClickException(f"no account is named {name}")
        link = passwords.reset_link(app.config, passwords.reset_token(db, app.config, user.id), None)
    click.echo(link)
    hours = passwords.hours_valid(app.config)
    where = "" if app.config.get("PUBLIC_URL") else " (after the site's address: set PUBLIC_URL to have it here)"
    click.echo(f"give it to {user.username} only: it works once, for {hours} h{where}", err=True)


@main.command("warm")
@click.argument("lessons", nargs=-1)
def warm_trusted_runs(lessons):
    """Compute the trusted runs of LESSONS (default: all) into the workers' store, ahead of time: an install or
    upgrade step (docs/operations.md#trusted-runs-ahead-of-time)."""
    from grader import runner
    from grader.errors import GraderError
    from grader.lesson.loader import load_all
    from webapp import load_settings, make_queue
    from webapp.sandboxing import check_sandbox

    config = load_settings().config
    if not config["TRUSTED_RUNS"]:
        raise click.ClickException("TRUSTED_RUNS is empty: workers keep trusted runs in memory only, so none is kept")
    try:
        launcher = check_sandbox(config)  # the workers' sandbox: it is part of a run's key
    except EnvironmentProblem as exc:
        raise click.ClickException(f"this machine cannot grade: {exc.message}") from None
    exercises = load_all(Path(config["EXERCISES"]) if config["EXERCISES"] else None)
    unknown = [i for i in lessons if i not in exercises]
    if unknown:
        raise click.ClickException(f"no lesson {', '.join(unknown)}")
    queue = make_queue(config)
    failed = 0
    try:
        _keep_trusted_runs(config, queue)
        device = runner.resolve_device(config["DEVICE"])
        for exercise in [exercises[i] for i in lessons] or exercises.values():
            try:
                computed = runner.warm(exercise, device, launcher)
            except GraderError as exc:
                failed += 1
                click.echo(f"{exercise.id:<22} failed: {exc.message}", err=True)
                continue
            click.echo(f"{exercise.id:<22} {'computed ' + ', '.join(computed) if computed else 'already stored'}")
    finally:
        queue.close()
    if failed:
        raise click.ClickException(f"{failed} lesson(s) could not be warmed; their first gradings will say why")


@main.command()
@click.option("-v", "--verbose", is_flag=True)
@click.option("--beside-server", is_flag=True, hidden=True, help="started by `serve --with-worker`: a quiet start")
def worker(verbose, beside_server):
    """Grade submissions from the queue: several at once, each timing with its device to itself."""
    _logging(verbose)
    from webapp import load_settings, make_queue
    from webapp.logs import announce
    from webapp.sandboxing import check_sandbox

    config = load_settings().config
    try:
        launcher = check_sandbox(config)
    except EnvironmentProblem as exc:
        raise click.ClickException(f"this worker cannot grade: {exc.message}") from None
    queue = make_queue(config, grading=True)
    settings = queue.settings
    _keep_trusted_runs(config, queue)
    _ready_to_grade(config, queue)
    banner = (
        f"amp-dojo worker {os.getpid()}: queue {_redact(queue.url)}, sandbox {launcher.name}, "
        f"device {config['DEVICE']}, {settings.concurrency} at once, {settings.pool_size} warm sandboxes"
    )
    if beside_server:  # the server's URL line is the start's one line
        logging.getLogger("amp_dojo.worker").info(banner)
    else:
        announce(banner)
    if config["WARM_AT_START"]:
        _warm_in_background(config, queue)
    # A short poll: an idle SQLite consumer would otherwise back off to 10 s before it sees a submission
    # (Redis is read blocking, at once).
    consumer = queue.huey.create_consumer(
        workers=settings.concurrency,
        worker_type="thread",
        periodic=False,
        initial_delay=0.05,
        backoff=1.2,
        max_delay=0.2,
    )
    try:
        with _heartbeat(config, queue, launcher.name):  # its record goes on a clean exit (webapp/workers.py)
            consumer.run()
    finally:
        queue.launchers.close()  # the warm sandboxes that never got a submission


def _heartbeat(config, queue, sandbox: str):
    """The worker's heartbeat in the queue's storage, so that every app process sees it alive (it needs no
    DATABASE: a worker on another machine reaches only the queue)."""
    from grader import runner
    from webapp.workers import Identity, WorkerBeat

    me = Identity.here(runner.resolve_device(config["DEVICE"]), sandbox, queue.settings.concurrency)
    return WorkerBeat(queue, me, float(config["WORKER_HEARTBEAT_SECONDS"]), queue.current.ids)


def _ready_to_grade(config, queue, timeout: float = 120.0) -> None:
    """Before the first task: PyTorch imported here and the warm sandboxes started, so that the first
    submission after a (re)start is graded as fast as any (what is queued meanwhile waits, and is not lost)."""
    from grader import runner
    from grader.sandboxes.pool import WarmPool

    device = runner.resolve_device(config["DEVICE"])
    launcher = queue.launchers.get(config["SANDBOX"], bool(config["ALLOW_LOCAL_SANDBOX"]), device)
    if isinstance(launcher, WarmPool) and not launcher.wait_until_ready(device, timeout):
        logging.getLogger("amp_dojo.worker").warning(
            "the warm sandboxes were not ready within %.0f s; grading anyway", timeout
        )


def _keep_trusted_runs(config, queue) -> None:
    from grader import runner

    where = config["TRUSTED_RUNS"]
    if where == "queue":
        runner.use_trusted_store(runner.KeyValueStore(queue.huey))
    elif where:
        runner.use_trusted_store(runner.DirectoryStore(where))


def _warm_in_background(config, queue) -> None:
    """The trusted runs of every lesson, computed (or found in the store) before learners need them, in a
    background thread that gives way to learners: its sandboxes run at the lowest CPU priority, and it pauses
    while a grading runs or submissions wait (grader/judge/warming.py). A learner's first grading of a lesson
    computes that lesson's runs itself meanwhile, so it waits for nothing else."""
    from grader import runner
    from grader.lesson.loader import load_all

    try:
        device = runner.resolve_device(config["DEVICE"])
        launcher = queue.launchers.get(config["SANDBOX"], bool(config["ALLOW_LOCAL_SANDBOX"]), device)
        exercises = load_all(Path(config["EXERCISES"]) if config["EXERCISES"] else None).values()
        runner.BackgroundWarm(list(exercises), device, launcher, learners_waiting=queue.pending_count).start()
    except Exception:
        logging.getLogger("amp_dojo.worker").exception("warming the trusted runs failed")


def _redact(url: str) -> str:
    """Queue URLs may carry a Redis password."""
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


def waitress_options(config, threads: int) -> dict:
    """waitress's limits, so that one client cannot stall the server: room for a class's connections (each a
    file descriptor, polled with poll() so that more than 1024 work), idle ones closed after
    SERVER_CHANNEL_TIMEOUT and looked for every few seconds, headers and bodies refused past the app's own
    limits before they are read. A slow sender is never idle; a reverse proxy that buffers whole requests keeps
    it away from the app and bounds how many one address holds (docs/security.md#reverse-proxy)."""
    timeout = float(config["SERVER_CHANNEL_TIMEOUT"])
    return {
        "threads": threads,
        "connection_limit": int(config["SERVER_CONNECTION_LIMIT"]),
        "channel_timeout": timeout,
        "cleanup_interval": max(1.0, min(10.0, timeout / 3)),
        "max_request_header_size": int(config["SERVER_MAX_HEADER_BYTES"]),
        "max_request_body_size": int(config["MAX_CONTENT_LENGTH"]),
        "recv_bytes": 65536,
        "inbuf_overflow": 524288,
        "asyncore_use_poll": True,
        "ident": "amp-dojo",
    }


def _serve(app, host: str, port: int, threads: int) -> None:
    """waitress where installed (a production WSGI server), else Werkzeug's threaded server."""
    from webapp import start_collector

    start_collector(app)  # leases are watched from the start, not from the first request
    try:
        import waitress
    except ImportError:
        app.run(host=host, port=port, threaded=True, use_reloader=False)
        return
    waitress.serve(app, host=host, port=port, **waitress_options(app.config, threads))


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--threads", default=16, show_default=True, help="request threads (each live stream holds one)")
@click.option("--with-worker", is_flag=True, help="also start one grading worker process")
@click.option("-v", "--verbose", is_flag=True)
def serve(host, port, threads, with_worker, verbose):
    """Serve the web app."""
    _logging(verbose)
    app = _app()
    from webapp.logs import announce
    from webapp.sandboxing import sandbox_problem

    problem = sandbox_problem(app.config)
    if problem:
        logging.getLogger("amp_dojo").warning("submissions will be refused: %s", problem)
    _interrupt_on_term()
    worker_proc = _start_worker(verbose) if with_worker else None
    announce(f"AMP Dojo is at http://{host}:{port}/  (Ctrl+C stops it)")
    try:
        _serve(app, host, port, threads)
    except KeyboardInterrupt:
        pass
    finally:
        if worker_proc is not None:
            _stop_worker(worker_proc)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("-v", "--verbose", is_flag=True, help="log everything (LOG_LEVEL=DEBUG): migrations, the queue, requests")
@click.pass_context
def run(ctx, host, port, verbose):
    """Web server and one worker together: the single-machine setup."""
    ctx.invoke(serve, host=host, port=port, with_worker=True, verbose=verbose)


def _interrupt_on_term() -> None:
    """Ctrl+C and SIGTERM (docker stop, systemd) both end in the `finally` that stops the worker,
    even where the shell started us with SIGINT ignored."""

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def _start_worker(verbose: bool) -> subprocess.Popen:
    """The worker is a separate process so that a grading never blocks a request."""
    args = [sys.executable, "-m", "webapp.cli", "worker", "--beside-server"] + (["-v"] if verbose else [])
    proc = subprocess.Popen(args, env=os.environ.copy())
    try:
        code = proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        return proc
    raise click.ClickException(f"the grading worker exited at start (status {code}); see its message above")


def _stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------- LTI 1.3 (webapp/lti): amp-dojo lti add-platform | list | remove | rotate-key ----------
from webapp.lti.commands import lti as _lti  # noqa: E402 - one block, for the merge

main.add_command(_lti)


# ---------- regrade (issue 37) ----------


@main.command("regrade")
@click.argument("course")
@click.argument("lesson")
@click.option("--apply", "apply_it", is_flag=True, help="make the new verdicts the submissions' own once graded")
@click.option("--inline", is_flag=True, help="grade in this process instead of waiting for a running worker")
def regrade(course, lesson, apply_it, inline):
    """Grade COURSE's (its id or join code) submissions of LESSON again; list who would flip (and apply)."""
    import time

    from webapp import classroom, regrades
    from webapp.db import connect

    app = _app()
    queue = app.extensions["amp_dojo_queue"]
    db = connect(app.config["DATABASE"])
    try:
        row = db.execute(
            "SELECT id FROM courses WHERE CAST(id AS TEXT) = ? OR join_code = ?",
            (course, classroom.normalise_code(course)),
        ).fetchone()
        if row is None or lesson not in {r["lesson"] for r in classroom.lessons(db, row["id"])}:
            raise click.ClickException(f"no course {course!r} with a lesson {lesson!r}")
        rid = regrades.start(db, queue, app.config, row["id"], lesson, "cli")
        while True:
            if inline:
                queue.run_pending(limit=1)
            regrades.collect(db, queue, app.config, rid)
            state = regrades.progress(db, rid)
            click.echo(f"regrade {rid}: {state['done']} of {state['total']} graded", err=True)
            if state["state"] != regrades.RUNNING:
                break
            time.sleep(0 if inline else 1)
        for flip in regrades.flips(db, rid):
            ids = ", ".join(sorted({f["id"] for f in flip["findings"] if f["id"]}))
            click.echo(f"{flip['username']}\t{flip['direction'].replace('_', ' ')}\t{ids}")
        if apply_it:
            click.echo(f"applied: {regrades.apply(db, rid, app.config)} verdicts changed", err=True)
    finally:
        db.close()


if __name__ == "__main__":
    main()

"""What several commands share: their options, the sandbox they grade in, and where trusted runs are kept."""

from __future__ import annotations

from pathlib import Path

import click

from grader.errors import GraderError
from grader.lesson.base import LANGUAGES
from grader.sandboxes.kinds import SANDBOXES, make_launcher
from grader.sandboxes.limits import limits_from
from grader.wording.phrases import phrase

DEVICE = click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda")

SANDBOX = click.option(
    "--sandbox",
    type=click.Choice(SANDBOXES),
    default="auto",
    show_default=True,
    envvar="AMP_DOJO_SANDBOX",
    help="where learner code runs: docker, bwrap, local (not isolated); auto picks the first that works here",
)

LIMIT = click.option(
    "--limit",
    "limits",
    multiple=True,
    metavar="NAME=VALUE",
    help="change a sandbox limit, e.g. --limit memory_bytes=8e9 --limit step_timeout_s=120 "
    "(names and defaults: docs/security.md)",
)

LANG = click.option("--lang", type=click.Choice(LANGUAGES), default="en", show_default=True)


def warm_launcher(launcher, device: str, again: bool = False):
    """The launcher behind a pool of one warm sandbox, started now, before this process imports PyTorch; with
    --watch (`again`) the next grading's sandbox is started behind each one. The device is guessed without
    PyTorch (an NVIDIA device node means CUDA); a wrong guess only costs the warm start."""
    from grader.sandboxes.pool import WarmPool

    guess = device if device != "auto" else ("cuda" if Path("/dev/nvidiactl").exists() else "cpu")
    return WarmPool(launcher, size=1, devices=(guess,), refill=again)


def keep_trusted_runs():
    """Trusted runs (each lesson's FP32 baseline and reference) are kept in the user's cache folder, so only the
    first `grader check` of a lesson on this machine computes them."""
    from grader import runner

    runner.use_trusted_store(runner.DirectoryStore(runner.user_cache_dir()))


def launcher_for(sandbox: str, limits: tuple[str, ...] = (), lang: str = "en"):
    pairs = [item.partition("=") for item in limits]
    if any(not sep for _, sep, _ in pairs):
        raise GraderError("--limit takes NAME=VALUE, e.g. --limit memory_bytes=8e9")
    launcher = make_launcher(sandbox, limits_from({k: v for k, _, v in pairs}), allow_local=True)
    if not launcher.isolated:
        click.echo(f"  .. {phrase('report.local_sandbox', lang)}", err=True)
    return launcher

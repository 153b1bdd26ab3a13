"""What several commands share: their options, the sandbox they grade in, and where trusted runs are kept."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from grader.errors import GraderError
from grader.lesson.base import LANGUAGES
from grader.sandboxes.kinds import SANDBOXES, make_launcher
from grader.sandboxes.limits import limits_from
from grader.wording.phrases import phrase

STARTED = time.perf_counter()  # about when the command started (this module loads first): a check's wall time

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


class ExistingFile(click.ParamType):
    """A file that must exist, refused in the learner's language (click's own refusal is English only)."""

    name = "file"

    def convert(self, value, param, ctx):
        path = Path(value)
        if path.is_dir():
            raise GraderError.worded("cli.not_a_file", path=str(path))
        if not path.exists():
            raise GraderError.worded("cli.no_file", path=str(path))
        return path


EXISTING_FILE = ExistingFile()

LANG_ENV = "AMP_DOJO_LANG"
LOCALE_ENV = ("LC_ALL", "LC_MESSAGES", "LANG")  # POSIX's order: the first one set decides


def locale_language(environ=None) -> str | None:
    """The learner's language from the locale: it_IT.UTF-8 is Italian, id_ID Indonesian; C, POSIX or a language
    the lessons are not written in is no choice (None)."""
    environ = os.environ if environ is None else environ
    for name in LOCALE_ENV:
        if value := environ.get(name, "").strip():
            code = value.split(".")[0].split("@")[0].split("_")[0].split("-")[0].lower()
            return code if code in LANGUAGES else None
    return None


def chosen_language(flag: str | None, environ=None) -> tuple[str, str]:
    """(language, where it came from: "flag", "env", "locale" or "default"): --lang, else AMP_DOJO_LANG, else
    the locale, else English. An AMP_DOJO_LANG the lessons do not speak is skipped, like an unknown locale."""
    environ = os.environ if environ is None else environ
    if flag:
        return flag, "flag"
    if (value := environ.get(LANG_ENV, "").strip().lower()) in LANGUAGES:
        return value, "env"
    if locale := locale_language(environ):
        return locale, "locale"
    return "en", "default"


def _lang_option(ctx, _param, value):
    lang, source = chosen_language(value)
    ctx.meta["amp_dojo.lang_source"] = source
    return lang


LANG = click.option(
    "--lang",
    type=click.Choice(LANGUAGES),
    default=None,
    callback=_lang_option,
    help=f"the language of everything said (default: ${LANG_ENV}, else the locale: LC_ALL, LC_MESSAGES, LANG; else en)",
)


def again(command: str, lang: str) -> str:
    """A `grader` command to print as a tip, in the language this one speaks: with --lang only where the command
    would not get `lang` without it (where AMP_DOJO_LANG or the locale chose it, they choose it again)."""
    ctx = click.get_current_context(silent=True)
    flagged = ctx is not None and ctx.meta.get("amp_dojo.lang_source") == "flag"
    return f"{command} --lang {lang}" if flagged and chosen_language(None)[0] != lang else command


def warm_launcher(launcher, device: str, again: bool = False, compiler: bool = False):
    """The launcher behind a pool of one warm sandbox, started now, before this process imports PyTorch; with
    --watch (`again`) the next grading's sandbox is started behind each one. The device is guessed without
    PyTorch (an NVIDIA device node means CUDA); a wrong guess only costs the warm start. `compiler`: the
    lesson compiles, and so does its blank (Exercise.compiles)."""
    from grader.sandboxes.pool import WarmPool

    launcher.fork = again  # one grading: a zygote would cost what forking from it saves (Launcher.fork)
    return WarmPool(launcher, size=1, devices=(guessed_device(device),), refill=again, compiler=compiler)


def guessed_device(device: str) -> str:
    """The device a grading would resolve, guessed without importing PyTorch: an NVIDIA device node means CUDA."""
    return device if device != "auto" else ("cuda" if Path("/dev/nvidiactl").exists() else "cpu")


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

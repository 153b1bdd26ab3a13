"""The `grader` command: a thin layer over `runner.run()` and `validate`.
Exit codes: 0 pass, 1 fail (the learner's code), 2 usage/exercise/environment.

PyTorch is imported only by the commands that grade, and `grader check` first starts
the sandbox that will run the learner's code, so that the two imports of PyTorch
(here and in the sandbox) happen side by side."""

from __future__ import annotations

from grader.cli.early import announce

announce()  # before the imports below: `grader check` says what it does within a fraction of a second

import click  # noqa: E402

from grader.cli import admin, learner, remote  # noqa: E402
from grader.cli.options import chosen_language  # noqa: E402
from grader.errors import GraderError  # noqa: E402
from grader.lesson.base import LANGUAGES  # noqa: E402


class Grader(click.Group):
    """Its commands' own errors (a mistyped lesson, a missing file) speak the learner's language: the command's
    --lang, else AMP_DOJO_LANG, else the locale (grader/cli/options.py), as the rest of what they print."""

    def parse_args(self, ctx, args):
        ctx.meta["grader.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except GraderError as exc:
            exc.lang = chosen_language(lang_flag(ctx.meta.get("grader.argv", [])))[0]
            raise


def lang_flag(args: list[str]) -> str | None:
    """The value of --lang among a command's arguments, if given and one the lessons speak."""
    for i, arg in enumerate(args):
        value = args[i + 1] if arg == "--lang" and i + 1 < len(args) else arg.partition("=")[2]
        if (arg == "--lang" or arg.startswith("--lang=")) and value in LANGUAGES:
            return value
    return None


@click.group(cls=Grader)
@click.version_option(package_name="amp-dojo")
def main():
    """AMP Dojo's grader: learn mixed precision by writing code a machine checks."""


def _register(*modules) -> None:
    """Every command defined in `modules` joins `grader`, under its own name."""
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, click.Command) and value is not main:
                main.add_command(value)


_register(learner, admin, remote)

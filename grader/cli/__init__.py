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


@click.group()
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

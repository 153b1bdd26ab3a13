"""The commands a learner uses: list and show lessons, start one, check a solution (once or on every save),
hints and the quick-check quiz."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import click

from grader.cli.options import (
    DEVICE,
    EXISTING_FILE,
    LANG,
    LIMIT,
    SANDBOX,
    STARTED,
    again,
    guessed_device,
    keep_trusted_runs,
    launcher_for,
    warm_launcher,
)
from grader.errors import GraderError
from grader.judge.syntax import syntax_verdict
from grader.lesson import hints, quiz
from grader.lesson.base import localize
from grader.lesson.loader import load_all, load_exercise
from grader.lesson.schema import Exercise
from grader.results import PASS, GradingResult
from grader.wording import formats, report
from grader.wording.phrases import phrase


@click.command("list")
@LANG
def list_(lang):
    """List the exercises (a broken lesson file is named, with its problems, and skipped)."""
    problems = []
    lessons = load_all(problems=problems).values()
    width = max((len(ex.id) for ex in lessons), default=0) + 1  # the longest id (fsdp2_mixed_precision) too
    for ex in lessons:
        click.echo(f"{ex.id:<{width}} {localize(ex.title, lang)}")
        click.echo(f"{'':<{width}} {localize(ex.summary, lang)}")
    for problem in problems:
        click.echo(f"skipped: {problem}", err=True)


@click.command()
@click.argument("exercise_id")
@LANG
@click.option("--hints", "with_hints", is_flag=True, help="also print the hints")
@click.option("--quiz", "with_quiz", is_flag=True, help="also print the quick-check quiz (answers at the end)")
def show(exercise_id, lang, with_hints, with_quiz):
    """Show a lesson, its task and the function to write."""
    ex = load_exercise(exercise_id)
    click.echo(click.style(localize(ex.title, lang), bold=True) + "\n")
    click.echo(localize(ex.lesson, lang))
    click.echo(click.style(phrase("notebook.task", lang), bold=True))
    click.echo(localize(ex.task, lang))
    write = phrase("notebook.write", lang)
    if ex.entrypoint.prepare is not None:
        prep = ex.entrypoint.prepare
        click.echo(
            f"{write}: def {prep.name}({', '.join(prep.params)})  ->  {', '.join(prep.returns)}  "
            f"({phrase('show.once', lang)})"
        )
    click.echo(f"{write}: def {ex.entrypoint.name}({', '.join(ex.entrypoint.params)})  ->  {ex.entrypoint.returns}")
    if with_hints:
        click.echo("\n" + click.style(phrase("show.hints", lang), bold=True))
        for i, hint in enumerate(ex.hints, 1):
            click.echo(f"  {i}. {localize(hint, lang)}")
    if with_quiz:
        click.echo("\n" + click.style(phrase("show.quiz", lang), bold=True))
        for i, q in enumerate(ex.quiz, 1):
            click.echo(f"  {i}. {localize(q.question, lang)}")
            for letter, choice in zip("abcdefgh", q.choices):
                click.echo(f"     {letter}) {localize(choice, lang)}")
        click.echo(
            f"  {phrase('show.answers', lang)}: "
            + "; ".join(
                f"{i}. {'abcdefgh'[q.answer]}: {localize(q.explanation, lang)}" for i, q in enumerate(ex.quiz, 1)
            )
        )
    click.echo(
        "\n"
        + phrase(
            "show.next",
            lang,
            start=f"grader start {ex.id}",
            check=again(f"grader check {ex.id} {ex.id}.py", lang),
            hint=again(f"grader hint {ex.id}", lang),
            quiz=again(f"grader quiz {ex.id}", lang),
        )
    )


@click.command()
@click.argument("exercise_id")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="overwrite an existing file")
@LANG
def start(exercise_id, path, force, lang):
    """Write the starter code of an exercise to PATH (default: ID.py)."""
    ex = load_exercise(exercise_id)
    path = path or Path(f"{ex.id}.py")
    if path.exists() and not force:
        raise GraderError.worded("cli.exists", path=str(path))
    path.write_text(ex.starter_in(lang), encoding="utf-8")
    click.echo(phrase("start.wrote", lang, path=path, command=again(f"grader check {ex.id} {path}", lang)))


@click.command()
@click.argument("exercise_id")
@click.argument("file", type=EXISTING_FILE)
@click.option("--json", "as_json", is_flag=True, help="print the result document (same as --format native)")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(formats.FORMATS)),
    default=None,
    help="print the verdict in this results.json contract",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="write the document here")
@click.option("--watch", is_flag=True, help="grade again each time FILE is saved (Ctrl+C stops)")
@click.option("--submit", "and_submit", is_flag=True, help="then send FILE to the server of `grader login` too")
@click.option(
    "--color",
    "colour",
    type=click.Choice(report.COLOUR_MODES),
    default="auto",
    show_default=True,
    help="colour the report: auto colours a terminal unless NO_COLOR is set",
)
@DEVICE
@SANDBOX
@LIMIT
@LANG
def check(exercise_id, file, as_json, fmt, output, watch, and_submit, colour, device, sandbox, limits, lang):
    """Grade FILE against exercise EXERCISE_ID."""
    exercise = load_exercise(exercise_id)
    if and_submit:
        if watch or fmt or as_json:
            raise GraderError("--submit prints the report: use it without --watch, --json or --format")
        from grader import remote

        remote.saved()  # not logged in: said before a grading that could not be sent
    grading = Grading(
        exercise,
        file,
        None,
        device,
        lang,
        fmt or ("native" if as_json else None),
        output,
        report.console_for(sys.stdout, colour),
        report.console_for(sys.stderr, colour),
        titles=check_titles(exercise, lang),
        hint=again(f"grader hint {exercise.id}", lang),
    )
    source = grading.file.read_text(encoding="utf-8", errors="replace")  # read once: the verdict quotes it
    if not watch and (unparsed := grading.unparsed(source)) is not None:
        since, grading.since = grading.since, None
        code = grading.show(unparsed, source, since)
        sys.exit(_and_submit(grading, code) if and_submit else code)
    grading.launcher = launcher = warm_launcher(
        launcher_for(sandbox, limits, lang), device, again=watch, compiler=exercise.compiles
    )
    try:
        code = watch_file(grading) if watch else grading()
    finally:
        launcher.close()
    sys.exit(_and_submit(grading, code) if and_submit else code)


def _and_submit(grading: Grading, local_code: int) -> int:
    """`check --submit`: the server grades FILE too (its verdict is what counts on the web page); the exit code
    is the worse of the two verdicts."""
    from grader import remote
    from grader.cli.remote import send

    grading.out.print("\n" + phrase("remote.verdict", grading.lang, url=remote.saved().url), style="bold")
    return max(local_code, send(grading.exercise.id, grading.file, 600, grading.lang, grading.out))


def check_titles(exercise: Exercise, lang: str) -> dict[str, str]:
    """The titles of a lesson's own checks in `lang` (the built-in checks are named by the catalog)."""
    return {c.id: localize(c.title, lang) for c in exercise.checks if getattr(c, "title", None)}


@dataclass
class Grading:
    """One `grader check`: what to grade, where, and how to show the verdict."""

    exercise: Exercise
    file: Path
    launcher: object
    device: str
    lang: str
    fmt: str | None  # a results.json contract, or None for the report
    output: Path | None
    out: object  # rich consoles on stdout and stderr
    err: object
    titles: dict | None = None  # the lesson's own checks' titles, in `lang`
    hint: str | None = None  # the command that shows a hint, told after a verdict that is not a pass
    since: float = STARTED  # when the wall time of the first grading began: the command's start

    def __call__(self) -> int:
        """Grades FILE as it is now; the exit code of its verdict."""
        since, self.since = self.since, None
        since = since if since is not None else time.perf_counter()  # --watch: each grading from the save on
        source = self.file.read_text(encoding="utf-8", errors="replace")
        quiet = self.fmt is not None and not self.output
        with report.StageProgress(self.err, self.lang, live=False if quiet else None) as progress:
            if not quiet:  # the steps show from here on; PyTorch's import is the first of them
                progress("loading")
            from grader import runner

            keep_trusted_runs()
            result = runner.run(
                self.exercise, source, device=self.device, launcher=self.launcher, progress=None if quiet else progress
            )
        return self.show(result, source, since)

    def unparsed(self, source: str) -> GradingResult | None:
        """The verdict on `source` (FILE as read) if it does not parse: told before a sandbox starts or PyTorch
        is imported (the device and dtype named are the ones a grading would use here; no sandbox ran)."""
        began = time.perf_counter()
        device = guessed_device(self.device)
        amp = self.exercise.workload.amp
        dtype = amp.cuda_dtype if device.startswith("cuda") else amp.cpu_dtype
        result = syntax_verdict(self.exercise.id, source, device, dtype, sandbox="-")
        if result is not None:
            result.duration_s = round(time.perf_counter() - began, 3)
        return result

    def show(self, result: GradingResult, source: str, since: float) -> int:
        """Prints the verdict as asked; its exit code."""
        if self.fmt:
            text = json.dumps(formats.FORMATS[self.fmt](result), indent=2)
            if self.output:
                self.output.write_text(text + "\n")
            else:
                click.echo(text)
        else:
            wall = time.perf_counter() - since
            src = report.Source(str(self.file), source)
            report.print_report(self.out, result, src, self.lang, titles=self.titles, wall_s=wall)
            if result.status != PASS and self.hint:
                self.out.print(phrase("report.stuck", self.lang, command=self.hint), style="dim")
            if self.output:
                self.output.write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        return 0 if result.status == PASS else 1

    def tell(self, key: str) -> None:
        """A line about the watching (on stderr, beside the progress)."""
        self.err.print(phrase(key, self.lang, file=self.file), style="dim")


def watch_file(grading: Grading) -> int:
    """Grades, then again after each save, until Ctrl+C; the exit code is the last verdict's. On a terminal
    each grading starts on a clear screen, so the report beside the editor is always the latest."""
    from grader.watch import Saves

    code = None
    try:
        with Saves(grading.file) as saves:
            code = grading()
            while True:
                grading.tell("watch.watching")
                if not saves.next():
                    grading.tell("watch.missing")
                    continue
                if report.on_terminal(grading.out):
                    grading.out.clear()
                grading.tell("watch.changed")
                code = grading()
    except KeyboardInterrupt:
        grading.tell("watch.stopped")
    return 1 if code is None else code


@click.command()
@click.argument("exercise_id")
@LANG
@click.option("--reset", is_flag=True, help="forget which hints of this lesson you have seen")
def hint(exercise_id, lang, reset):
    """Show the next hint of a lesson; the ones you have seen stay above it."""
    ex = load_exercise(exercise_id)
    if reset:
        hints.forget(ex.id)
        click.echo(phrase("hint.reset", lang, lesson=ex.id, command=again(f"grader hint {ex.id}", lang)))
        return
    total, before = len(ex.hints), hints.seen(ex.id)
    try:
        shown = hints.reveal_next(ex.id, total)
    except OSError as exc:
        shown = min(before + 1, total)
        click.echo(f"could not remember this hint in {hints.state_file()}: {exc}", err=True)
    for i, text in enumerate(ex.hints[:shown], 1):
        if i < shown or before >= total:
            click.echo(click.style(f"{i}. ", dim=True) + localize(text, lang))
        else:
            heading = click.style(phrase("hint.shown", lang, shown=i, total=total), bold=True)
            click.echo(f"{heading}\n{localize(text, lang)}")
    if before >= total:
        click.echo(click.style(phrase("hint.done", lang, total=total), bold=True))
    command = again(f"grader hint {ex.id}" + ("" if shown < total else " --reset"), lang)
    click.echo(click.style(phrase("hint.more" if shown < total else "hint.again", lang, command=command), dim=True))


@click.command("quiz")
@click.argument("exercise_id")
@LANG
def quiz_(exercise_id, lang):
    """Answer the lesson's quick-check quiz: a wrong first answer gets a second try, then the explanation."""
    ex = load_exercise(exercise_id)
    right_first = 0
    for index, q in enumerate(ex.quiz):
        letters = quiz.LETTERS[: len(q.choices)]
        click.echo(click.style(phrase("quiz.question", lang, n=index + 1, total=len(ex.quiz)), bold=True))
        click.echo(localize(q.question, lang))
        for letter, choice in zip(letters, q.choices):
            click.echo(f"  {letter}) {localize(choice, lang)}")
        for attempt in (1, 2):
            said = quiz.feedback(ex, index, _ask_choice(letters, lang), lang, attempt)
            if said.retry:
                wrong = click.style(phrase("quiz.wrong", lang), fg="red", bold=True)
                click.echo(f"{wrong} {phrase('quiz.retry', lang)}")
                continue
            mark = click.style(
                phrase("quiz.right" if said.correct else "quiz.wrong", lang),
                fg="green" if said.correct else "red",
                bold=True,
            )
            told = "" if said.correct else " " + phrase("quiz.answer_was", lang, letter=letters[said.answer])
            click.echo(f"{mark}{told} {said.explanation}\n")
            right_first += said.correct and attempt == 1
            break
    click.echo(click.style(phrase("quiz.summary", lang, right=right_first, total=len(ex.quiz)), bold=True))


def _ask_choice(letters: str, lang: str) -> int:
    def parse(text: str) -> int:
        text = text.strip().lower().rstrip(")")
        if len(text) != 1 or text not in letters:
            raise click.UsageError(phrase("quiz.bad_choice", lang, letters=", ".join(letters)))
        return letters.index(text)

    return click.prompt(phrase("quiz.prompt", lang, letters="/".join(letters)), value_proc=parse)

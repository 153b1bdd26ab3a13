"""The `grader` command: a thin layer over `runner.run()` and `validate`.
Exit codes: 0 pass, 1 fail (the learner's code), 2 usage/exercise/environment.

PyTorch is imported only by the commands that grade, and `grader check` first starts
the sandbox that will run the learner's code, so that the two imports of PyTorch
(here and in the sandbox) happen side by side."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from grader.errors import GraderError
from grader.lesson import hints, quiz
from grader.lesson.base import LANGUAGES, localize
from grader.lesson.loader import load_all, load_exercise
from grader.lesson.schema import Exercise
from grader.results import PASS
from grader.sandboxes.kinds import SANDBOXES, make_launcher
from grader.sandboxes.limits import limits_from
from grader.wording import formats, report
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


@click.group()
@click.version_option(package_name="amp-dojo")
def main():
    """AMP Dojo's grader: learn mixed precision by writing code a machine checks."""


@main.command("list")
@LANG
def list_(lang):
    """List the exercises (a broken lesson file is named, with its problems, and skipped)."""
    problems = []
    for ex in load_all(problems=problems).values():
        click.echo(f"{ex.id:<20} {localize(ex.title, lang)}")
        click.echo(f"{'':<20} {localize(ex.summary, lang)}")
    for problem in problems:
        click.echo(f"skipped: {problem}", err=True)


@main.command()
@click.argument("exercise_id")
@LANG
@click.option("--hints", "with_hints", is_flag=True, help="also print the hints")
@click.option("--quiz", "with_quiz", is_flag=True, help="also print the quick-check quiz (answers at the end)")
def show(exercise_id, lang, with_hints, with_quiz):
    """Show a lesson, its task and the function to write."""
    ex = load_exercise(exercise_id)
    click.echo(click.style(localize(ex.title, lang), bold=True) + "\n")
    click.echo(localize(ex.lesson, lang))
    click.echo(click.style("Task", bold=True))
    click.echo(localize(ex.task, lang))
    if ex.entrypoint.prepare is not None:
        prep = ex.entrypoint.prepare
        click.echo(
            f"Write: def {prep.name}({', '.join(prep.params)})  ->  {', '.join(prep.returns)}  (once, before the steps)"
        )
    click.echo(f"Write: def {ex.entrypoint.name}({', '.join(ex.entrypoint.params)})  ->  {ex.entrypoint.returns}")
    if with_hints:
        click.echo("\n" + click.style("Hints", bold=True))
        for i, hint in enumerate(ex.hints, 1):
            click.echo(f"  {i}. {localize(hint, lang)}")
    if with_quiz:
        click.echo("\n" + click.style("Quiz", bold=True))
        for i, q in enumerate(ex.quiz, 1):
            click.echo(f"  {i}. {localize(q.question, lang)}")
            for letter, choice in zip("abcdefgh", q.choices):
                click.echo(f"     {letter}) {localize(choice, lang)}")
        click.echo(
            "  Answers: "
            + "; ".join(
                f"{i}. {'abcdefgh'[q.answer]}: {localize(q.explanation, lang)}" for i, q in enumerate(ex.quiz, 1)
            )
        )
    click.echo(
        f"\nStart with: grader start {ex.id}   Check with: grader check {ex.id} {ex.id}.py   "
        f"Stuck? grader hint {ex.id}   Then: grader quiz {ex.id}"
    )


@main.command()
@click.argument("exercise_id")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("exercises"),
    show_default=True,
    help="the lesson folder to write into",
)
def new(exercise_id, folder):
    """Write a lesson skeleton to fill in (text marked TODO, working code, workload and checks)."""
    import re

    from grader.lesson.skeleton import skeleton

    if not re.fullmatch(r"[a-z][a-z0-9_-]*", exercise_id):
        raise GraderError(f"{exercise_id!r} is not a lesson id: use lower-case letters, digits, _ and -")
    target = folder / f"{exercise_id}.yaml"
    if target.exists():
        raise GraderError(f"{target} exists already")
    folder.mkdir(parents=True, exist_ok=True)
    target.write_text(skeleton(exercise_id, str(target)), encoding="utf-8")
    click.echo(f"wrote {target}: fill in every TODO, then run: grader validate {target}")


@main.command()
@click.argument("exercise_id")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="overwrite an existing file")
def start(exercise_id, path, force):
    """Write the starter code of an exercise to PATH (default: ID.py)."""
    ex = load_exercise(exercise_id)
    path = path or Path(f"{ex.id}.py")
    if path.exists() and not force:
        raise GraderError(f"{path} exists; use --force to overwrite it")
    path.write_text(ex.starter, encoding="utf-8")
    click.echo(f"wrote {path}; edit it, then run: grader check {ex.id} {path}")


@main.command()
@click.argument("exercise_id")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
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
def check(exercise_id, file, as_json, fmt, output, watch, colour, device, sandbox, limits, lang):
    """Grade FILE against exercise EXERCISE_ID."""
    exercise = load_exercise(exercise_id)
    launcher = warm_launcher(launcher_for(sandbox, limits, lang), device, again=watch)
    keep_trusted_runs()
    grading = Grading(
        exercise,
        file,
        launcher,
        device,
        lang,
        fmt or ("native" if as_json else None),
        output,
        report.console_for(sys.stdout, colour),
        report.console_for(sys.stderr, colour),
    )
    try:
        sys.exit(watch_file(grading) if watch else grading())
    finally:
        launcher.close()


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

    def __call__(self) -> int:
        """Grades FILE as it is now; the exit code of its verdict."""
        from grader import runner

        source = self.file.read_text(encoding="utf-8", errors="replace")
        quiet = self.fmt is not None and not self.output
        with report.StageProgress(self.err, self.lang, live=False if quiet else None) as progress:
            result = runner.run(
                self.exercise, source, device=self.device, launcher=self.launcher, progress=None if quiet else progress
            )
        if self.fmt:
            text = json.dumps(formats.FORMATS[self.fmt](result), indent=2)
            if self.output:
                self.output.write_text(text + "\n")
            else:
                click.echo(text)
        else:
            report.print_report(self.out, result, report.Source(str(self.file), source), self.lang)
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


def launcher_for(sandbox: str, limits: tuple[str, ...] = (), lang: str = "en"):
    pairs = [item.partition("=") for item in limits]
    if any(not sep for _, sep, _ in pairs):
        raise GraderError("--limit takes NAME=VALUE, e.g. --limit memory_bytes=8e9")
    launcher = make_launcher(sandbox, limits_from({k: v for k, _, v in pairs}), allow_local=True)
    if not launcher.isolated:
        click.echo(f"  .. {phrase('report.local_sandbox', lang)}", err=True)
    return launcher


@main.command()
@click.argument("exercise_id")
@LANG
@click.option("--reset", is_flag=True, help="forget which hints of this lesson you have seen")
def hint(exercise_id, lang, reset):
    """Show the next hint of a lesson; the ones you have seen stay above it."""
    ex = load_exercise(exercise_id)
    if reset:
        hints.forget(ex.id)
        click.echo(phrase("hint.reset", lang, lesson=ex.id))
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
    click.echo(click.style(phrase("hint.more" if shown < total else "hint.again", lang, lesson=ex.id), dim=True))


@main.command("quiz")
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


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--schema-only", is_flag=True, help="only check the files' structure, do not grade")
@click.option("--no-mutants", is_flag=True, help="skip the mutants (faster; the lesson's power is not checked)")
@DEVICE
@SANDBOX
@LIMIT
def validate(paths, schema_only, no_mutants, device, sandbox, limits):
    """Prove exercises are sound: schema, a workload that learns, reference passes, starter and mutants fail."""
    from grader.authoring.validate import expand, margins, measured_row, validate_file

    files = expand(list(paths))
    if not files:
        raise GraderError("no exercise files found")
    bad = 0
    launcher = None if schema_only else launcher_for(sandbox, limits)
    for path in files:
        report = validate_file(
            path,
            device=device,
            grade=not schema_only,
            launcher=launcher,
            progress=lambda m: click.echo(f"  .. {m}", err=True),
            with_mutants=not no_mutants,
        )
        for problem in report.problems:
            click.echo(problem)
        if report.reference:
            row = measured_row(report.reference)
            click.echo(
                f"{report.exercise_id}: reference {row['status']} (coverage {row['coverage']}, "
                f"parity {row['parity_update']}, memory ratio {row['memory_ratio']}, speedup {row['speedup']}); "
                f"starter {report.starter.status}"
            )
            click.echo(f"{report.exercise_id}: reference margins: " + "; ".join(margins(report.reference)))
            if report.examples:
                right = sum(not m for m in report.examples.values())
                click.echo(
                    f"{report.exercise_id}: examples: {right} of {len(report.examples)} judged as the lesson says"
                )
        if report.mutants:
            counted = [m for m in report.mutants if m.skipped is None]
            click.echo(
                f"{report.exercise_id}: mutation score {report.mutation_score:.0%} "
                f"({sum(m.killed for m in counted)} of {len(counted)} mutants fail)"
            )
            for m in report.mutants:
                click.echo("  " + mutant_line(m))
        click.echo(f"{path}: {'ok' if report.ok else 'PROBLEMS'}")
        bad += not report.ok
    if bad:
        raise SystemExit(1)


def mutant_line(m) -> str:
    if m.skipped is not None:
        return f"skipped  {m.name:<22} {m.skipped}"
    if not m.killed:
        return click.style("SURVIVED", fg="red", bold=True) + f" {m.name:<22} {m.description}"
    by = ", ".join(m.failed_checks) or "-"
    how = f"error: {m.error[:80]}" if m.status == "error" else f"failed {by}"
    return f"killed   {m.name:<22} {how}"


@main.command()
@click.argument("exercise_ids", nargs=-1)
@DEVICE
@SANDBOX
@LIMIT
def warm(exercise_ids, device, sandbox, limits):
    """Compute the trusted runs (FP32 baseline and reference) of these lessons (default: all) into the cache
    that `grader check` uses, so that no check waits for them."""
    from grader import runner

    keep_trusted_runs()
    launcher = launcher_for(sandbox, limits)
    exercises = load_all()
    unknown = [i for i in exercise_ids if i not in exercises]
    if unknown:
        raise GraderError(f"no lesson {', '.join(unknown)}; `grader list` shows them")
    device = runner.resolve_device(device)
    for ex in [exercises[i] for i in exercise_ids] or exercises.values():
        computed = runner.warm(ex, device, launcher)
        click.echo(f"{ex.id:<20} {'computed ' + ', '.join(computed) if computed else 'already cached'}")
    click.echo(f"trusted runs for {device} ({launcher.name} sandbox) are in {runner.user_cache_dir()}")


@main.command()
@DEVICE
@SANDBOX
@LIMIT
@click.option("--json", "as_json", is_flag=True)
def selftest(device, sandbox, limits, as_json):
    """Grade every reference and starter here; print what was measured."""
    from grader import runner
    from grader.authoring.validate import measured_row
    from grader.judge.devices import bf16_support

    launcher = launcher_for(sandbox, limits)
    support = bf16_support()
    if runner.resolve_device(device) == "cpu":
        click.echo(support.describe(), err=as_json)
    rows = []
    for ex in load_all().values():
        for role, code in (("reference", ex.reference), ("starter", ex.starter)):
            click.echo(f"  .. {ex.id} {role}", err=True)
            rows.append(
                {
                    "exercise": ex.id,
                    "code": role,
                    **measured_row(runner.run(ex, code, device=device, launcher=launcher)),
                }
            )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(table(rows, runner.resolve_device(device)))
    wrong = [r for r in rows if (r["code"] == "reference") != (r["status"] == PASS)]
    sys.exit(1 if wrong else 0)


def table(rows: list[dict], device: str) -> str:
    fmt = lambda v: "-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))  # noqa: E731
    head = [
        "exercise",
        "code",
        "status",
        "score",
        "coverage",
        "speedup",
        "speedup_low",
        "memory_ratio",
        "parity_update",
        "seconds",
    ]
    body = [[fmt(r[h]) for h in head] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([f"device: {device}", line(head), sep, *map(line, body)])


@main.command()
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("docs/exercise.schema.json"),
    show_default=True,
)
def schema(output):
    """Write the JSON Schema of lesson files (for editor completion)."""
    output.write_text(json.dumps(Exercise.model_json_schema(), indent=2) + "\n")
    click.echo(f"wrote {output}")

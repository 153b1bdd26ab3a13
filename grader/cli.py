"""The `grader` command: a thin layer over `runner.run()` and `validate`.
Exit codes: 0 pass, 1 fail (the learner's code), 2 usage/exercise/environment."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from grader import formats, runner
from grader.errors import GraderError
from grader.launcher import limits_from
from grader.loader import load_all, load_exercise
from grader.results import FAIL, NOT_APPLICABLE, PASS, GradingResult
from grader.sandbox import SANDBOXES, make_launcher
from grader.schema import LANGUAGES, Exercise, localize
from grader.wording import measured_in_words

STATUS_MARK = {PASS: "PASS", FAIL: "FAIL", "error": "ERROR", NOT_APPLICABLE: "n/a"}
DEVICE = click.option("--device", default="auto", show_default=True, help="auto, cpu or cuda")
SANDBOX = click.option("--sandbox", type=click.Choice(SANDBOXES), default="auto", show_default=True,
                       envvar="AMP_DOJO_SANDBOX",
                       help="where learner code runs: docker, bwrap, local (not isolated); auto picks the first "
                            "that works here")
LIMIT = click.option("--limit", "limits", multiple=True, metavar="NAME=VALUE",
                     help="change a sandbox limit, e.g. --limit memory_bytes=8e9 --limit step_timeout_s=120 "
                          "(names and defaults: docs/security.md)")
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
@click.option("--hints", is_flag=True, help="also print the hints")
@click.option("--quiz", is_flag=True, help="also print the quick-check quiz (answers at the end)")
def show(exercise_id, lang, hints, quiz):
    """Show a lesson, its task and the function to write."""
    ex = load_exercise(exercise_id)
    click.echo(click.style(localize(ex.title, lang), bold=True) + "\n")
    click.echo(localize(ex.lesson, lang))
    click.echo(click.style("Task", bold=True))
    click.echo(localize(ex.task, lang))
    click.echo(f"Write: def {ex.entrypoint.name}({', '.join(ex.entrypoint.params)})  ->  {ex.entrypoint.returns}")
    if hints:
        click.echo("\n" + click.style("Hints", bold=True))
        for i, hint in enumerate(ex.hints, 1):
            click.echo(f"  {i}. {localize(hint, lang)}")
    if quiz:
        click.echo("\n" + click.style("Quiz", bold=True))
        for i, q in enumerate(ex.quiz, 1):
            click.echo(f"  {i}. {localize(q.question, lang)}")
            for letter, choice in zip("abcdefgh", q.choices):
                click.echo(f"     {letter}) {localize(choice, lang)}")
        click.echo("  Answers: " + "; ".join(f"{i}. {'abcdefgh'[q.answer]}: {localize(q.explanation, lang)}"
                                          for i, q in enumerate(ex.quiz, 1)))
    click.echo(f"\nStart with: grader start {ex.id}   Check with: grader check {ex.id} {ex.id}.py")


@main.command()
@click.argument("exercise_id")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), default=Path("exercises"),
              show_default=True, help="the lesson folder to write into")
def new(exercise_id, folder):
    """Write a lesson skeleton to fill in (text marked TODO, working code, workload and checks)."""
    import re

    from grader.skeleton import skeleton

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


def _progress(stage, **info):
    text = {"static": "reading your code", "baseline": "running the FP32 baseline",
            "starting": "starting your code", "steps": f"training {info.get('total', '')} steps",
            "timing": f"timing against FP32 (round {info.get('rounds', 0)})",
            "timing_given": f"timing against the given step (round {info.get('rounds', 0)})",
            "done": "done"}.get(stage, stage)
    click.echo(f"  .. {text}", err=True)


@main.command()
@click.argument("exercise_id")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print the result document (same as --format native)")
@click.option("--format", "fmt", type=click.Choice(sorted(formats.FORMATS)), default=None,
              help="print the verdict in this results.json contract")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="write the document here")
@DEVICE
@SANDBOX
@LIMIT
def check(exercise_id, file, as_json, fmt, output, device, sandbox, limits):
    """Grade FILE against exercise EXERCISE_ID."""
    ex = load_exercise(exercise_id)
    source = file.read_text(encoding="utf-8", errors="replace")
    quiet = as_json or fmt
    launcher = launcher_for(sandbox, limits)
    result = runner.run(ex, source, device=device, launcher=launcher,
                        progress=None if quiet and not output else _progress)
    if as_json or fmt:
        doc = formats.FORMATS[fmt or "native"](result)
        text = json.dumps(doc, indent=2)
        if output:
            output.write_text(text + "\n")
        else:
            click.echo(text)
    else:
        click.echo(render(result, ex, source))
        if output:
            output.write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    sys.exit(0 if result.status == PASS else 1)


def launcher_for(sandbox: str, limits: tuple[str, ...] = ()):
    pairs = [item.partition("=") for item in limits]
    if any(not sep for _, sep, _ in pairs):
        raise GraderError("--limit takes NAME=VALUE, e.g. --limit memory_bytes=8e9")
    launcher = make_launcher(sandbox, limits_from({k: v for k, _, v in pairs}), allow_local=True)
    if not launcher.isolated:
        click.echo("  .. sandbox: local (your code runs unisolated, as you: fine for your own code only)", err=True)
    return launcher


def render(result: GradingResult, ex: Exercise, source: str) -> str:
    lines = source.splitlines()
    out = [f"{ex.id} on {result.device} ({result.amp_dtype}, sandbox: {result.sandbox})", ""]
    if result.error:
        err = result.error
        out.append(click.style("ERROR ", fg="red", bold=True) + err.message)
        if err.line and 0 < err.line <= len(lines):
            out.append(f"    {err.line:>4} | {lines[err.line - 1]}")
        out.append("")
    for c in result.checks:
        colour = {PASS: "green", FAIL: "red", "error": "red"}.get(c.status, "yellow")
        out.append(f"{click.style(STATUS_MARK[c.status].ljust(5), fg=colour, bold=True)} {c.id:<11} {c.message}")
        for line in measured_in_words(c):
            out.append(f"      {line}")
        for f in c.findings:
            tag = "note" if f.severity == "info" else "mistake"
            out.append(f"      {tag} [{f.id}]" + (f" line {f.line}" if f.line else "") + f": {f.message}")
            if f.line and 0 < f.line <= len(lines):
                out.append(f"        {f.line:>4} | {lines[f.line - 1]}")
            out.append(f"        fix: {f.fix}")
    out += ["", f"{result.status.upper()}  score {result.score:.0%}  ({result.duration_s:.1f} s)"]
    if result.output.strip():
        out += ["", "your code printed:", *("  " + ln for ln in result.output.strip().splitlines()[:40])]
    return "\n".join(out)


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--schema-only", is_flag=True, help="only check the files' structure, do not grade")
@click.option("--no-mutants", is_flag=True, help="skip the mutants (faster; the lesson's power is not checked)")
@DEVICE
@SANDBOX
@LIMIT
def validate(paths, schema_only, no_mutants, device, sandbox, limits):
    """Prove exercises are sound: schema, a workload that learns, reference passes, starter and mutants fail."""
    from grader.validate import expand, margins, measured_row, validate_file

    files = expand(list(paths))
    if not files:
        raise GraderError("no exercise files found")
    bad = 0
    launcher = None if schema_only else launcher_for(sandbox, limits)
    for path in files:
        report = validate_file(path, device=device, grade=not schema_only, launcher=launcher,
                               progress=lambda m: click.echo(f"  .. {m}", err=True), with_mutants=not no_mutants)
        for problem in report.problems:
            click.echo(problem)
        if report.reference:
            row = measured_row(report.reference)
            click.echo(f"{report.exercise_id}: reference {row['status']} (coverage {row['coverage']}, "
                       f"parity {row['parity_update']}, memory ratio {row['memory_ratio']}, speedup {row['speedup']}); "
                       f"starter {report.starter.status}")
            click.echo(f"{report.exercise_id}: reference margins: " + "; ".join(margins(report.reference)))
            if report.examples:
                right = sum(not m for m in report.examples.values())
                click.echo(f"{report.exercise_id}: examples: {right} of {len(report.examples)} judged as the "
                           "lesson says")
        if report.mutants:
            counted = [m for m in report.mutants if m.skipped is None]
            click.echo(f"{report.exercise_id}: mutation score {report.mutation_score:.0%} "
                       f"({sum(m.killed for m in counted)} of {len(counted)} mutants fail)")
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
@DEVICE
@SANDBOX
@LIMIT
@click.option("--json", "as_json", is_flag=True)
def selftest(device, sandbox, limits, as_json):
    """Grade every reference and starter here; print what was measured."""
    from grader.validate import measured_row

    from grader.cpu import bf16_support

    launcher = launcher_for(sandbox, limits)
    support = bf16_support()
    if runner.resolve_device(device) == "cpu":
        click.echo(support.describe(), err=as_json)
    rows = []
    for ex in load_all().values():
        for role, code in (("reference", ex.reference), ("starter", ex.starter)):
            click.echo(f"  .. {ex.id} {role}", err=True)
            rows.append({"exercise": ex.id, "code": role, **measured_row(runner.run(ex, code, device=device,
                                                                                  launcher=launcher))})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(table(rows, runner.resolve_device(device)))
    wrong = [r for r in rows if (r["code"] == "reference") != (r["status"] == PASS)]
    sys.exit(1 if wrong else 0)


def table(rows: list[dict], device: str) -> str:
    fmt = lambda v: "-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))  # noqa: E731
    head = ["exercise", "code", "status", "score", "coverage", "speedup", "speedup_low", "memory_ratio",
            "parity_update", "seconds"]
    body = [[fmt(r[h]) for h in head] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([f"device: {device}", line(head), sep, *map(line, body)])


@main.command()
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("docs/exercise.schema.json"), show_default=True)
def schema(output):
    """Write the JSON Schema of lesson files (for editor completion)."""
    output.write_text(json.dumps(Exercise.model_json_schema(), indent=2) + "\n")
    click.echo(f"wrote {output}")

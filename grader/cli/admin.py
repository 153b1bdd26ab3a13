"""The commands for the people who write lessons and run the server: start a new lesson, validate one, compute its
trusted runs ahead of the first grading, check this device, write the lessons' JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from grader.cli.options import DEVICE, LIMIT, SANDBOX, keep_trusted_runs, launcher_for
from grader.errors import GraderError
from grader.lesson.loader import load_all
from grader.lesson.schema import Exercise
from grader.results import PASS


@click.command()
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
        for warning in report.warnings:
            click.echo(warning)
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
            for name, reason in report.skipped_examples.items():
                click.echo(f"  skipped  example {name:<14} {reason}")
        for kind in report.mutation_scores:
            counted = [m for m in report.mutants if m.skipped is None and m.kind == kind]
            click.echo(
                f"{report.exercise_id}: {kind} mutation score {report.mutation_scores[kind]:.0%} "
                f"({sum(m.killed for m in counted)} of {len(counted)} {kind} mutants fail)"
            )
            for m in report.mutants:
                if m.kind == kind:
                    click.echo("  " + mutant_line(m))
        if report.mutants and "lesson" not in report.mutation_scores:
            click.echo(f"{report.exercise_id}: lesson mutants: none (mutants.lesson, see docs/authoring.md)")
        click.echo(f"{path}: {'ok' if report.ok else 'PROBLEMS'}")
        bad += not report.ok
    if bad:
        raise SystemExit(1)


def mutant_line(m) -> str:
    if m.skipped is not None:
        return f"skipped  {m.name:<22} {m.skipped}"
    if m.missed:
        return click.style("MISSED  ", fg="red", bold=True) + f" {m.name:<22} {'; '.join(m.missed)}"
    if not m.killed:
        return click.style("SURVIVED", fg="red", bold=True) + f" {m.name:<22} {m.description}"
    by = ", ".join(m.failed_checks) or "-"
    how = f"error: {m.error[:80]}" if m.status == "error" else f"failed {by}"
    return f"killed   {m.name:<22} {how}"


@click.command()
@click.argument("exercise")
@click.option("--steps", type=click.IntRange(2, 200), help="measure this many steps instead of the lesson's")
@SANDBOX
@LIMIT
def tune(exercise, steps, sandbox, limits):
    """Measure what sizing a lesson's workload needs here: the FP32 baseline's and the reference's loss and
    gradient norms per step, their step times and peak memory, per device kind this machine has. EXERCISE is
    a lesson id or, as for `grader validate`, the path of its YAML file."""
    from pathlib import Path

    from grader.authoring.tune import report
    from grader.authoring.tune import tune as measure
    from grader.lesson.loader import load_exercise, load_exercise_file

    is_file = exercise.endswith((".yaml", ".yml")) and Path(exercise).is_file()
    exercise = load_exercise_file(Path(exercise)) if is_file else load_exercise(exercise)
    sizings, notes = measure(exercise, launcher_for(sandbox, limits), steps)
    for sizing in sizings:
        click.echo(report(exercise, sizing) + "\n")
    for note in notes:
        click.echo(note)


@click.command()
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


@click.command()
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


@click.command()
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


@click.command()
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

"""`grader validate` and `grader selftest`: an exercise is sound when its file
parses, its workload learns within the graded steps, its reference solution
passes every applicable check, its starter fails at least one, and every
mutant of the reference (grader/authoring/mutants.py) fails. Problems are data; the CLI
decides the exit code."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from grader import runner
from grader.authoring import lesson_mutants, mutants, static_review
from grader.errors import ExerciseError, LessonCodeFailed
from grader.lesson.base import skipped_here
from grader.lesson.loader import exercise_files, read_lesson
from grader.lesson.positions import yaml_path
from grader.results import NOT_APPLICABLE, PASS, GradingResult


@dataclass
class Report:
    path: Path
    exercise_id: str | None = None
    problems: list[str] = field(default_factory=list)  # each `path:line: field: message`; any refuses the lesson
    warnings: list[str] = field(default_factory=list)  # `path:line: warning: field: message`; printed only
    reference: GradingResult | None = None
    starter: GradingResult | None = None
    mutants: list[mutants.MutantResult] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)  # example name -> how its verdict differed
    skipped_examples: dict[str, str] = field(default_factory=dict)  # example name -> why not graded here

    @property
    def mutation_score(self) -> float | None:
        """All mutants together: 100% means both the generic and the lesson's own are all killed."""
        return mutants.score(self.mutants) if self.mutants else None

    @property
    def mutation_scores(self) -> dict[str, float]:
        """The score of the generic mutants and of the lesson's own, apart (a kind the lesson has none of is
        left out)."""
        kinds = dict.fromkeys(m.kind for m in self.mutants)
        return {kind: mutants.score(self.mutants, kind) for kind in kinds}

    @property
    def ok(self) -> bool:
        return not self.problems


OK = (PASS, NOT_APPLICABLE)  # what `others: pass` accepts: a check that passes, or does not apply on this device
MIN_LOSS_DROP = 1 / 3  # how much the FP32 loss must fall over the graded steps


def learning_problem(where, baseline_losses: list[float]) -> str | None:
    """What is wrong with a workload whose FP32 loss does not fall by MIN_LOSS_DROP (`where` starts the message:
    the file and line). A loss that rises (or stops being a number) diverges: a smaller learning rate helps, a
    larger one never."""
    if len(baseline_losses) < 2 or not baseline_losses[0] > 0:
        return None
    first, last = baseline_losses[0], baseline_losses[-1]
    steps = len(baseline_losses)
    if not math.isfinite(last) or last > first:
        return (
            f"{where}: workload: the FP32 baseline diverges: its loss rises from {first:.3f} to {last:.3f} over "
            f"{steps} steps; lower optimizer.lr (or the learning rate in workload.setup), or check the setup's "
            "model, data and loss"
        )
    drop = 1 - last / first
    if drop >= MIN_LOSS_DROP:
        return None
    return (
        f"{where}: workload: the FP32 baseline's loss falls only {drop:.0%} over {steps} steps "
        f"({first:.3f} -> {last:.3f}); it must fall by at least {MIN_LOSS_DROP:.0%}, or the checks cannot tell a "
        "step that trains from one that does not (raise optimizer.lr, data.separation or steps)"
    )


def example_mismatches(expect, result: GradingResult) -> list[str]:
    """How a verdict differs from what a lesson's example says it must be (empty: as expected)."""
    out = []
    if result.status != expect.status:
        why = f" ({result.error.message[:120]})" if result.error else ""
        out.append(f"status {result.status}{why}, expected {expect.status}")
    found = {f.id for c in result.checks for f in c.findings}
    out += [f"no {f} finding (found: {', '.join(sorted(found)) or 'none'})" for f in expect.findings if f not in found]
    out += [f"a {f} finding, expected none (absent)" for f in expect.absent if f in found]
    for check_id, status in expect.checks.items():
        got = result.check(check_id)
        if got is None or got.status != status:
            out.append(f"check {check_id} {got.status if got else 'missing'}, expected {status}")
    if expect.others_pass:  # every check the example does not list passes, or does not apply here
        unlisted = [c for c in result.checks if c.id not in expect.checks]
        out += [f"check {c.id} {c.status}, expected pass (others: pass)" for c in unlisted if c.status not in OK]
    if expect.error and (result.error is None or result.error.kind != expect.error):
        out.append(f"error kind {result.error.kind if result.error else 'none'}, expected {expect.error}")
    return out


def margins(result: GradingResult) -> list[str]:
    """How close a (reference) verdict is to each threshold: the instructor's view of a lesson's slack."""
    out = []
    for c in result.checks:
        m, t = c.measured, c.threshold or {}
        if c.id == "parity" and m.get("max_update_rel_diff") is not None:
            out.append(
                f"parity update {m['max_update_rel_diff']:.2%} of {t['update_rtol']:.0%} allowed "
                f"({m['max_update_rel_diff'] / t['update_rtol']:.0%} of the tolerance), loss "
                f"{m['max_loss_rel_diff']:.2%} of {t['loss_rtol']:.0%}"
            )
        elif c.id == "coverage" and "fraction_16bit" in m:
            out.append(f"coverage {m['fraction_16bit']:.0%} (at least {t['min_fraction']:.0%})")
        elif c.id == "ranks" and m.get("max_rank_update_rel_diff") is not None:
            out.append(f"ranks {m['max_rank_update_rel_diff']:.2g} apart (at most {t['update_rtol']:g})")
        elif c.id == "memory" and "ratio" in m:
            out.append(f"memory {m['ratio']:.0%} of the FP32 peak (at most {t['max_ratio']:.0%})")
    return out


def validate_file(
    path: Path, *, device: str = "auto", launcher=None, grade: bool = True, progress=None, with_mutants: bool = True
) -> Report:
    """Every problem the file's text shows, at once (format, TODOs, lesson code, warnings); the gradings only
    for a lesson with none, since they need all of it to work."""
    lesson = read_lesson(path)
    exercise = lesson.exercise
    report = Report(path, exercise.id if exercise else (lesson.data or {}).get("id"), [str(p) for p in lesson.problems])
    if lesson.data is not None:
        problems, warnings = static_review.review(lesson)
        problems = sorted([*lesson.problems, *problems], key=lambda p: p.line or 0)
        report.problems = [str(p) for p in problems]
        report.warnings += [str(w) for w in warnings]
    if exercise is None or not grade or report.problems:
        return report
    try:
        return _graded(report, lesson, device, launcher, progress, with_mutants)
    except ExerciseError as exc:  # the lesson's own code failed while a submission was judged
        report.problems.append(f"{path}:{lesson_error_line(lesson, exc)}: {exc.message}")
        return report


def lesson_error_line(lesson, exc: ExerciseError) -> int | None:
    """A lesson check's error names its line inside the check's python; a setup error, its workload.setup."""
    if isinstance(exc, LessonCodeFailed):  # its reference, baseline or starter raised: at that line of it
        return lesson.locator.block_line(exc.field if isinstance(exc.field, tuple) else (exc.field,), exc.line)
    message = exc.message
    for i, spec in enumerate(lesson.exercise.checks):
        if hasattr(spec, "python") and f"lesson check {spec.id!r}" in message:
            return lesson.locator.block_line(("checks", i, "python"), getattr(exc, "line", None))
    return lesson.locator.line(("workload", "setup"))


def _graded(report: Report, lesson, device, launcher, progress, with_mutants) -> Report:
    exercise, path, at = lesson.exercise, lesson.path, lesson.locator.line
    if progress:
        progress(f"{exercise.id}: grading the reference solution")
    report.reference = runner.run(exercise, exercise.reference, device=device, launcher=launcher)
    ref = report.reference
    if fault := lesson_fault(lesson, "the reference solution", ref):
        report.problems.append(fault)
    elif ref.error:
        line = lesson.locator.block_line(("reference",), ref.error.line)
        report.problems.append(f"{path}:{line}: reference: the reference solution errored: {ref.error.message}")
    for c in ref.checks:
        if c.status not in (PASS, NOT_APPLICABLE):
            i = next((i for i, spec in enumerate(exercise.checks) if spec.id == c.id), None)
            loc = ("checks",) if i is None else ("checks", i)
            report.problems.append(
                f"{path}:{at(loc)}: {yaml_path(loc)}: the reference solution does not pass {c.id}: {c.message}"
            )
    if progress:
        progress(f"{exercise.id}: grading the starter")
    where = f"{path}:{at(('workload',))}"
    if ref.error is None and (problem := learning_problem(where, ref.plots.get("loss", {}).get("baseline", []))):
        report.problems.append(problem)
    report.starter = runner.run(exercise, exercise.starter, device=device, launcher=launcher)
    if report.starter.status == PASS:
        report.problems.append(
            f"{path}:{at(('starter',))}: starter: the starter code passes every check; it must leave work to do"
        )
    sound = not report.problems  # mutants only say something about a lesson whose reference passes
    grade_examples(report, lesson, device, launcher, progress)
    if with_mutants and sound:
        report.mutants = mutants.run_all(exercise, device=device, launcher=launcher, progress=progress)
        report.mutants += lesson_mutants.run_all(exercise, device=device, launcher=launcher, progress=progress)
        names = [m.name for m in exercise.mutants.lesson]
        for m, said in zip(survivors(report.mutants), survivor_problems(report.mutants)):
            loc = ("mutants", "lesson", names.index(m.name)) if m.kind == "lesson" and m.name in names else ("checks",)
            report.problems.append(f"{path}:{at(loc)}: {said}")
    return report


def grade_examples(report: Report, lesson, device, launcher, progress=None) -> None:
    """Each example graded here, its verdict against its `expect`; one for other devices only is skipped,
    with the reason `grader validate` prints."""
    exercise, at = lesson.exercise, lesson.locator.line
    kind = "cuda" if runner.resolve_device(device).startswith("cuda") else "cpu"
    for i, example in enumerate(exercise.examples):
        if reason := skipped_here(example.devices, kind, f"examples[{i}]"):
            report.skipped_examples[example.name] = reason
            continue
        if progress:
            progress(f"{exercise.id}: example {example.name}")
        got = runner.run(exercise, example.code, device=device, launcher=launcher)
        if fault := lesson_fault(lesson, f"the example {example.name!r}", got):
            report.problems.append(fault)
            continue
        report.examples[example.name] = example_mismatches(example.expect, got)
        report.problems += [
            f"{lesson.path}:{at(('examples', i))}: examples[{i}] {example.name}: {m}"
            for m in report.examples[example.name]
        ]


def lesson_fault(lesson, what: str, result: GradingResult) -> str | None:
    """A grading stopped by the lesson's own code (grader/worker/errors.lesson_failure: its workload.setup raised
    while the graded code ran): the lesson's problem, at that line of the file, whatever code was graded."""
    if result.error is None or result.error.kind != "lesson":
        return None
    params = (result.error.parts[0].get("params") or {}) if result.error.parts else {}
    line = lesson.locator.block_line(("workload", "setup"), params.get("setup_line"))
    detail = params.get("detail") or result.error.message
    return f"{lesson.path}:{line}: workload.setup: the lesson's own code raised while {what} was graded: {detail}"


def survivors(results: list[mutants.MutantResult]) -> list[mutants.MutantResult]:
    """The mutants that got through: not killed, not skipped with a reason."""
    return [m for m in results if not m.killed and m.skipped is None]


def survivor_problems(results: list[mutants.MutantResult]) -> list[str]:
    out = []
    for m in survivors(results):
        if m.missed:  # a lesson mutant stopped, but not by what the lesson says guards it
            out.append(
                f"mutants.lesson: the mutant {m.name!r} ({m.description}) fails, but not as its caught_by says: "
                f"{'; '.join(m.missed)} (failed: {', '.join(m.failed_checks) or m.status})"
            )
            continue
        which = "lesson mutant" if m.kind == "lesson" else "mutant"
        out.append(
            f"checks: the {which} {m.name!r} ({m.description}) passes every "
            "check; tighten a tolerance or make the workload exercise what it changes"
        )
    return out


def expand(paths: list[str]) -> list[Path]:
    if not paths:
        return exercise_files()
    out = []
    for p in map(Path, paths):
        out += exercise_files(p) if p.is_dir() else [p]
    return out


def measured_row(result: GradingResult) -> dict:
    def value(check_id, key):
        c = result.check(check_id)
        if c is None or c.status == NOT_APPLICABLE:
            return None
        return c.measured.get(key)

    return {
        "status": result.status,
        "score": result.score,
        "coverage": value("coverage", "fraction_16bit"),
        # a profiling lesson times the fixed step against its given step instead of the FP32 baseline
        "speedup": value("speedup", "speedup") or value("step_time", "speedup"),
        "speedup_low": value("speedup", "ci95_low") or value("step_time", "ci95_low"),
        "memory_ratio": value("memory", "ratio"),
        "parity_update": value("parity", "max_update_rel_diff"),
        "seconds": result.duration_s,
    }

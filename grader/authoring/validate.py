"""`grader validate` and `grader selftest`: an exercise is sound when its file
parses, its workload learns within the graded steps, its reference solution
passes every applicable check, its starter fails at least one, and every
mutant of the reference (grader/authoring/mutants.py) fails. Problems are data; the CLI
decides the exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader import runner
from grader.authoring import lesson_mutants, mutants
from grader.checks import lesson
from grader.errors import ExerciseError
from grader.lesson.loader import block_line, exercise_files, parse_exercise
from grader.lesson.skeleton import todo_fields
from grader.results import NOT_APPLICABLE, PASS, GradingResult
from grader.worker import workload


@dataclass
class Report:
    path: Path
    exercise_id: str | None = None
    problems: list[str] = field(default_factory=list)
    reference: GradingResult | None = None
    starter: GradingResult | None = None
    mutants: list[mutants.MutantResult] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)  # example name -> how its verdict differed

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


def learning_problem(path: Path, baseline_losses: list[float]) -> str | None:
    if len(baseline_losses) < 2 or baseline_losses[0] <= 0:
        return None
    first, last = baseline_losses[0], baseline_losses[-1]
    drop = 1 - last / first
    if drop >= MIN_LOSS_DROP:
        return None
    return (
        f"{path}: workload: the FP32 baseline's loss falls only {drop:.0%} over {len(baseline_losses)} steps "
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


def lesson_code_problems(path: Path, exercise) -> list[str]:
    """The lesson's own Python (workload.setup, lesson checks) run here first, so an error in it is reported
    at its line in the YAML file, not as a failed grading."""
    out = []
    for kind in ("cpu", "cuda", "cpu_amx"):
        override = getattr(exercise.workload, kind, None)
        if kind != "cpu" and override is None:
            continue
        wl = exercise.workload.for_device(kind)
        if wl.setup is None:
            continue
        where = ("workload", kind, "setup") if override is not None and override.setup else ("workload", "setup")
        try:
            problem = workload.build_problem(wl.model_dump())
        except workload.SetupError as exc:
            out.append(f"{path}:{block_line(path, where, exc.line)}: {'.'.join(where)}: {exc.message}")
            continue
        if unprovided := problem.unprovided_by(exercise.entrypoint.model_dump()):
            out.append(f"{path}: {unprovided}")
    for i, spec in enumerate(exercise.checks):
        if hasattr(spec, "python"):
            try:
                lesson.compile_check(spec)
            except ExerciseError as exc:
                line = block_line(path, ("checks", i, "python"), getattr(exc, "line", None))
                out.append(f"{path}:{line}: checks[{i}].python: {exc.message}")
    return out


def validate_file(
    path: Path, *, device: str = "auto", launcher=None, grade: bool = True, progress=None, with_mutants: bool = True
) -> Report:
    exercise, problems = parse_exercise(path)
    report = Report(path, exercise.id if exercise else None, [str(p) for p in problems])
    if exercise is not None:
        report.problems += [f"{path}: {f}: still says TODO" for f in todo_fields(exercise.model_dump())]
        code_problems = lesson_code_problems(path, exercise)
        report.problems += code_problems
    if exercise is None or not grade or code_problems:
        return report
    try:
        return _graded(report, path, exercise, device, launcher, progress, with_mutants)
    except ExerciseError as exc:  # the lesson's own code failed while a submission was judged
        report.problems.append(f"{path}: {exc.message}")
        return report


def _graded(report: Report, path: Path, exercise, device, launcher, progress, with_mutants) -> Report:
    if progress:
        progress(f"{exercise.id}: grading the reference solution")
    report.reference = runner.run(exercise, exercise.reference, device=device, launcher=launcher)
    ref = report.reference
    if ref.error:
        report.problems.append(f"{path}: reference: the reference solution errored: {ref.error.message}")
    for c in ref.checks:
        if c.status not in (PASS, NOT_APPLICABLE):
            report.problems.append(f"{path}: checks.{c.id}: the reference solution does not pass: {c.message}")
    if progress:
        progress(f"{exercise.id}: grading the starter")
    if ref.error is None and (problem := learning_problem(path, ref.plots.get("loss", {}).get("baseline", []))):
        report.problems.append(problem)
    report.starter = runner.run(exercise, exercise.starter, device=device, launcher=launcher)
    if report.starter.status == PASS:
        report.problems.append(f"{path}: starter: the starter code passes every check; it must leave work to do")
    sound = not report.problems  # mutants only say something about a lesson whose reference passes
    for i, example in enumerate(exercise.examples):
        if progress:
            progress(f"{exercise.id}: example {example.name}")
        got = runner.run(exercise, example.code, device=device, launcher=launcher)
        report.examples[example.name] = example_mismatches(example.expect, got)
        report.problems += [f"{path}: examples[{i}] {example.name}: {m}" for m in report.examples[example.name]]
    if with_mutants and sound:
        report.mutants = mutants.run_all(exercise, device=device, launcher=launcher, progress=progress)
        report.mutants += lesson_mutants.run_all(exercise, device=device, launcher=launcher, progress=progress)
        report.problems += [f"{path}: {p}" for p in survivor_problems(report.mutants)]
    return report


def survivor_problems(results: list[mutants.MutantResult]) -> list[str]:
    out = []
    for m in results:
        if m.killed or m.skipped is not None:
            continue
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

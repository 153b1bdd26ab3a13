"""`grader validate` and `grader selftest`: an exercise is sound when its file
parses, its reference solution passes every applicable check and its starter
fails at least one. Problems are data; the CLI decides the exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader import runner
from grader.loader import exercise_files, parse_exercise
from grader.results import NOT_APPLICABLE, PASS, GradingResult


@dataclass
class Report:
    path: Path
    exercise_id: str | None = None
    problems: list[str] = field(default_factory=list)
    reference: GradingResult | None = None
    starter: GradingResult | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_file(path: Path, *, device: str = "auto", launcher=None, grade: bool = True, progress=None) -> Report:
    exercise, problems = parse_exercise(path)
    report = Report(path, exercise.id if exercise else None, [str(p) for p in problems])
    if exercise is None or not grade:
        return report
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
    report.starter = runner.run(exercise, exercise.starter, device=device, launcher=launcher)
    if report.starter.status == PASS:
        report.problems.append(f"{path}: starter: the starter code passes every check; it must leave work to do")
    return report


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

    return {"status": result.status, "score": result.score, "coverage": value("coverage", "fraction_16bit"),
            "speedup": value("speedup", "speedup"), "speedup_low": value("speedup", "ci95_low"),
            "memory_ratio": value("memory", "ratio"), "parity_param": value("parity", "max_param_rel_diff"),
            "seconds": result.duration_s}

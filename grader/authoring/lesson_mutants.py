"""A lesson's own mutants (`mutants.lesson`, grader/lesson/mutant_spec.py) graded like
submissions: each is the reference with one edit made, and must fail, by the checks
and findings the lesson says catch it. They are scored apart from the generic ones,
so a 100% on the generic mutants cannot hide a lesson point that no check guards."""

from __future__ import annotations

from grader import runner
from grader.authoring.mutants import MutantResult
from grader.lesson.base import localize, skipped_here
from grader.lesson.mutant_spec import LessonMutant, edited
from grader.lesson.schema import Exercise
from grader.results import FAIL, PASS, GradingResult


def missed(mutant: LessonMutant, result: GradingResult) -> list[str]:
    """What `caught_by` names that this verdict lacks: a check that did not fail, a finding not found."""
    found = {f.id for c in result.checks for f in c.findings}
    out = []
    for check_id in mutant.caught_by.checks:
        got = result.check(check_id)
        if got is None or got.status != FAIL:
            out.append(f"check {check_id} {got.status if got else 'missing'}")
    lacking = [f for f in mutant.caught_by.findings if f not in found]
    if lacking:  # what was found instead tells a near miss (another id, the same mistake) from a real one
        out += [f"no {f} finding (found: {', '.join(sorted(found)) or 'none'})" for f in lacking]
    return out


def judge(mutant: LessonMutant, result: GradingResult) -> MutantResult:
    """Killed means not passed, and caught where the lesson says: a mutant stopped by another check than the
    one that guards the lesson's point says that check has no power over it."""
    failed = [c.id for c in result.checks if c.status == FAIL]
    error = result.error.message if result.error else None
    lacking = missed(mutant, result) if result.status != PASS else []
    return MutantResult(
        mutant.name,
        localize(mutant.why),
        result.status != PASS and not lacking,
        result.status,
        failed,
        error=error,
        kind="lesson",
        missed=lacking,
    )


def run_all(exercise: Exercise, *, device: str = "auto", launcher=None, progress=None) -> list[MutantResult]:
    out = []
    kind = "cuda" if runner.resolve_device(device).startswith("cuda") else "cpu"
    for i, mutant in enumerate(exercise.mutants.lesson):
        if reason := skipped_here(mutant.devices, kind, f"mutants.lesson[{i}]"):
            out.append(MutantResult(mutant.name, localize(mutant.why), False, "skipped", skipped=reason, kind="lesson"))
            continue
        if progress:
            progress(f"{exercise.id}: lesson mutant {mutant.name}")
        code = edited(exercise.reference, mutant)
        out.append(judge(mutant, runner.run(exercise, code, device=device, launcher=launcher)))
    return out

"""Checks proven to have power: every mutant of every shipped lesson's
reference must fail, and a lesson whose checks let a mutant through fails
`grader validate`."""

import pytest
from conftest import FIXTURES

from grader.authoring import mutants
from grader.authoring.validate import validate_file
from grader.lesson.loader import load_all, parse_exercise

CASES = [
    (ex.id, m.name)
    for ex in load_all().values()
    for m in mutants.applicable(ex, "cpu")
    if m.name not in ex.mutants.skip
]


@pytest.mark.parametrize("exercise_id,mutant", CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_every_mutant_of_a_shipped_reference_fails(exercise_id, mutant, exercises, grade):
    ex = exercises[exercise_id]
    m = next(m for m in mutants.applicable(ex) if m.name == mutant)
    result = grade(exercise_id, mutants.source(ex, m))
    assert result.status != "pass", f"mutant {mutant} ({m.description}) passed: {result.to_dict()}"


def test_each_lesson_gets_the_mutants_its_task_exercises(exercises):
    names = {ex_id: {m.name for m in mutants.applicable(ex)} for ex_id, ex in exercises.items()}
    assert {"no_step", "frozen_block", "lr_doubled", "grad_scaled"} <= names["autocast"]
    assert "no_clip" in names["grad_scaler"] and "no_clip" not in names["autocast"]
    assert "micro_batch_dropped" in names["grad_accumulation"]
    assert "outputs_kept" in names["reduce_memory"] and "outputs_kept" not in names["grad_scaler"]
    ranked = {"one_rank_no_step", "no_allreduce"}
    assert ranked <= names["ddp_mixed_precision"] and not ranked & names["accelerate"]
    assert {"no_clip", "micro_batch_dropped"} <= names["accelerate"]  # its model and optimizer are Accelerate's
    # what only the overflow inside the window shows: gradients never cleared after it, a constant scale
    assert "grads_kept_after_overflow" in names["grad_scaler"] and "grads_kept_after_overflow" not in names["autocast"]
    assert "scale_hard_coded" in names["gradient_penalty"] and "scale_hard_coded" not in names["grad_scaler"]
    assert "unscale_wrong_optimizer" in names["multiple_models"] - names["grad_scaler"]  # two optimizers, clipping
    assert "decoy_wrap" in names["ddp_mixed_precision"] - names["accelerate"]
    assert "backward_under_autocast" in names["gradient_penalty"] - names["accelerate"]  # Accelerate's autocast
    assert "cuda_sync" in names["profiling"] and "cuda_sync" not in names["autocast"]


def test_a_cuda_only_sync_mutant_is_killed_on_cpu_by_the_source_alone(exercises, grade):
    """On a CPU the appended `if ... == 'cuda':` branch never runs: host_syncs must fail from the source."""
    ex = exercises["profiling"]
    m = next(m for m in mutants.applicable(ex) if m.name == "cuda_sync")
    result = grade("profiling", mutants.source(ex, m))
    assert result.check("host_syncs").status == "fail"
    assert [f.id for f in result.check("host_syncs").findings] == ["host_sync_cuda_only"]
    assert result.check("parity").status == "pass"


def test_a_mutant_keeps_the_reference_and_its_entrypoint_signature(exercises):
    ex = exercises["grad_scaler"]
    src = mutants.source(ex, mutants.MUTANTS[0])
    assert src.startswith(ex.reference.rstrip())
    namespace = {}
    exec(compile(src, "mutant.py", "exec"), namespace)
    import inspect

    assert list(inspect.signature(namespace["train_step"]).parameters) == list(ex.entrypoint.params)


def test_validate_fails_a_lesson_whose_checks_let_a_mutant_through(launcher):
    path = FIXTURES / "exercises" / "weak.yaml"
    exercise, problems = parse_exercise(path)
    assert not problems
    report = validate_file(path, device="cpu", launcher=launcher)
    survived = {m.name for m in report.mutants if not m.killed}
    assert "lr_doubled" in survived, [(m.name, m.status) for m in report.mutants]
    assert report.mutation_score < 1.0
    assert any("mutant 'lr_doubled'" in p and "passes every check" in p for p in report.problems)
    assert report.examples["doubled_learning_rate"]  # its wrong example passed, against what the lesson says
    assert any("examples[" in p and "doubled_learning_rate: status pass" in p for p in report.problems)
    assert not report.ok


def test_skipped_mutants_are_reported_with_their_reason_and_not_graded(launcher, tmp_path):
    path = FIXTURES / "exercises" / "weak.yaml"
    names = [m.name for m in mutants.applicable(parse_exercise(path)[0])]
    skip = "".join(f"    {n}: an equivalent mutant here\n" for n in names)
    target = tmp_path / "weak.yaml"
    target.write_text(path.read_text() + "mutants:\n  skip:\n" + skip)
    exercise, problems = parse_exercise(target)
    assert not problems
    results = mutants.run_all(exercise, device="cpu", launcher=launcher)
    assert [r.name for r in results] == names
    assert all(r.status == "skipped" and r.skipped == "an equivalent mutant here" for r in results)

"""The shipped lessons are sound on CPU: the reference passes every
applicable check, the starter fails, and CUDA-only checks say so."""

import pytest

from grader.authoring.validate import example_mismatches, learning_problem
from grader.lesson.base import LANGUAGES, localize, skipped_here
from grader.lesson.loader import exercise_files, load_all

IDS = [p.stem for p in exercise_files()]
EXAMPLES = [(ex.id, e.name) for ex in load_all().values() for e in ex.examples]


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_solution_passes(exercise_id, exercises, grade):
    ex = exercises[exercise_id]
    result = grade(exercise_id, ex.reference)
    assert result.status == "pass", result.to_dict()
    assert result.score == 1.0


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_fp32_baseline_learns_enough_for_the_checks_to_tell(exercise_id, exercises, grade):
    """What `grader validate` demands of a workload, on every shipped lesson (the overflowed step, which every run
    skips, costs one update)."""
    result = grade(exercise_id, exercises[exercise_id].reference)
    assert learning_problem(exercise_id, result.plots["loss"]["baseline"]) is None


@pytest.mark.parametrize("exercise_id", IDS)
def test_starter_fails_with_a_diagnosis(exercise_id, exercises, grade):
    """A starter fails for the reason the lesson teaches: a failed check, or (custom autograd functions,
    float16 overflow) the error that reason causes, explained by a named finding."""
    result = grade(exercise_id, exercises[exercise_id].starter)
    assert result.status in ("fail", "error")
    failed = [c for c in result.checks if c.status == "fail"]
    assert failed and all(c.message for c in failed)
    assert all(f.fix for c in failed for f in c.findings)


@pytest.mark.parametrize("exercise_id", IDS)
def test_speedup_is_not_applicable_on_cpu_never_passed(exercise_id, exercises, grade):
    result = grade(exercise_id, exercises[exercise_id].reference)
    speed = result.check("speedup")
    if speed is not None:
        assert speed.status == "not_applicable"
        assert "not applicable" in speed.message


@pytest.mark.parametrize("exercise_id", IDS)
def test_lesson_text_exists_in_every_language(exercise_id, exercises):
    ex = exercises[exercise_id]
    for lang in LANGUAGES:
        for text in (ex.title, ex.summary, ex.lesson, ex.task, *ex.hints):
            assert isinstance(text, dict) and text.get(lang, "").strip(), (exercise_id, lang)
        for q in ex.quiz:
            assert q.question[lang] and q.explanation[lang] and all(c[lang] for c in q.choices)


def test_lessons_are_ordered_as_taught():
    assert list(load_all()) == [
        "autocast",
        "grad_scaler",
        "grad_accumulation",
        "reduce_memory",
        "transformer_block",
        "multiple_models",
        "gradient_penalty",
        "custom_autograd",
        "fp16_vs_bf16",
        "profiling",
        "ddp_mixed_precision",
        "accelerate",
        "compile_autocast",
        "channels_last",
        "lr_scheduler_skips",
        "fp8_training",
        "fsdp2_mixed_precision",
        "resume_training",
        "attention_fp16",
    ]


def test_localize_falls_back_to_english():
    assert localize({"en": "hello"}, "it") == "hello"
    assert localize("plain", "id") == "plain"


@pytest.mark.parametrize("exercise_id,name", EXAMPLES, ids=[f"{e}-{n}" for e, n in EXAMPLES])
def test_lesson_example_gets_the_verdict_its_lesson_states(exercise_id, name, exercises, grade):
    i, example = next((i, e) for i, e in enumerate(exercises[exercise_id].examples) if e.name == name)
    if reason := skipped_here(example.devices, "cpu", f"examples[{i}]"):  # the suite grades on the CPU
        pytest.skip(reason)
    result = grade(exercise_id, example.code)
    assert example_mismatches(example.expect, result) == [], result.to_dict()


def test_every_shipped_lesson_carries_wrong_examples(exercises):
    for ex in exercises.values():
        assert sum(e.expect.status != "pass" for e in ex.examples) >= 2, ex.id


def test_the_readme_lists_every_shipped_lesson():
    """README's lesson list is where a newcomer learns what there is: a lesson left out of it is not found."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    listed = readme.split("Lessons (in English, Italian and Indonesian):", 1)[1].split("A lesson is one YAML file", 1)[
        0
    ]
    assert [i for i in IDS if f"`{i}`" not in listed] == []

"""Similarity across a class (webapp/similarity.py): a renamed copy stands out among distinct correct solutions,
the starter code counts for nobody, and a class of 200 is computed in seconds."""

import time
from pathlib import Path

from class_solutions import renamed, solutions

from grader.lesson.loader import parse_exercise
from webapp import similarity

STARTER = parse_exercise(Path(__file__).resolve().parents[2] / "exercises" / "grad_scaler.yaml")[0].starter_in("en")


def test_two_renamed_copies_of_one_solution_rank_first_among_30_distinct_correct_solutions():
    codes = {f"s{i}": code for i, code in enumerate(solutions(30))}
    assert len({tuple(t for t, _ in similarity.tokens(c)) for c in codes.values()}) == 30  # distinct, not renames
    for code in codes.values():
        compile(code, "solution", "exec")
    codes["copy"] = renamed(codes["s7"])
    assert codes["copy"] != codes["s7"]
    pairs = similarity.rank(codes, STARTER)
    assert {pairs[0].a, pairs[0].b} == {"s7", "copy"} and pairs[0].score == 1.0
    assert pairs[1].score < 1.0


def test_the_starter_code_alone_scores_no_similarity():
    codes = {"starter-1": STARTER, "starter-2": STARTER, "s0": solutions(1)[0]}
    assert similarity.rank(codes, STARTER) == []
    assert similarity.overlapping_lines(STARTER, STARTER, STARTER) == set()


def test_overlapping_lines_are_the_copied_ones_not_the_starters():
    original = solutions(30)[7]
    copied = similarity.overlapping_lines(original, renamed(original), STARTER)
    assert copied and max(copied) <= len(original.splitlines())
    assert not copied & {1, 2, 5}  # the starter's imports and signature are everyone's
    assert similarity.overlapping_lines(original, solutions(30)[20], STARTER) < copied  # another solution shares less


def test_a_class_of_200_is_ranked_in_seconds():
    base = solutions(30)
    codes = {f"s{i}": base[i % 30].replace("1.0", str(1 + i % 7)) + f"\nx{i} = {i}\n" * (i % 5) for i in range(200)}
    start = time.perf_counter()
    pairs = similarity.rank(codes, STARTER)
    elapsed = time.perf_counter() - start
    assert pairs and elapsed < 5.0, elapsed

"""The quick-check quiz's feedback rule, shared by the web app and `grader quiz`:
a first wrong answer only says so, so the learner thinks again instead of being
handed the answer; the right answer, or a second wrong one, comes with the
explanation."""

from __future__ import annotations

from dataclasses import dataclass

from grader.lesson.base import localize
from grader.lesson.schema import Exercise

LETTERS = "abcdefgh"


@dataclass
class Feedback:
    correct: bool
    retry: bool = False
    answer: int | None = None  # the right choice, once it may be told
    explanation: str | None = None


def feedback(ex: Exercise, index: int, choice: int, lang: str = "en", attempt: int = 1) -> Feedback:
    q = ex.quiz[index]
    if choice != q.answer and attempt < 2:
        return Feedback(correct=False, retry=True)
    return Feedback(correct=choice == q.answer, answer=q.answer, explanation=localize(q.explanation, lang))

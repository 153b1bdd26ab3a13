"""What the tutor may be handed about a lesson, and the one thing it may not see but its leak guard needs. The
tutor package never imports the lesson loader (an import contract says so): create_app passes these two functions
to its blueprint, so that the public text and the solutions are taken from the lesson in exactly one place each."""

from __future__ import annotations

from grader.errors import ExerciseNotFound
from webapp import content


def lesson_text(lesson_id: str, lang: str) -> dict | None:
    """What the learner sees on the lesson page, as plain text: title, lesson, task, hints and starter."""
    try:
        ex = content.exercise(lesson_id)
    except ExerciseNotFound:
        return None
    public = content.public_lesson(ex, lang)
    return {key: public[key] for key in ("id", "title", "lesson", "task", "hints", "starter")}


def solutions(lesson_id: str) -> list[str]:
    """For the leak guard only, never for a prompt: the reference and the examples known to pass."""
    try:
        ex = content.exercise(lesson_id)
    except ExerciseNotFound:
        return []
    return [ex.reference, *(e.code for e in ex.examples if e.expect.status == "pass")]

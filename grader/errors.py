"""User-facing errors of the grader itself (never a learner's mistake: those are
data in the result). Exit codes follow the CLI contract: 2 for usage, exercise
or environment problems."""

import click


class GraderError(click.ClickException):
    exit_code = 2


class ExerciseError(GraderError):
    """An exercise file is malformed or inconsistent."""


class ExerciseNotFound(GraderError):
    pass


class EnvironmentProblem(GraderError):
    """The machine cannot grade as asked (no CUDA, no sandbox, broken baseline)."""


class LessonCodeFailed(ExerciseError):
    """The lesson's own code (its reference, FP32 baseline or given step) raised in a trusted run: the lesson's
    fault, which `grader validate` reports at that code's line in the lesson file."""

    def __init__(self, message: str, field: str | tuple, line: int | None = None):
        super().__init__(message)
        self.field, self.line = field, line

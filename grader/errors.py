"""User-facing errors of the grader itself (never a learner's mistake: those are
data in the result). Exit codes follow the CLI contract: 2 for usage, exercise
or environment problems."""

import click


class GraderError(click.ClickException):
    """Shown in the learner's language (`lang`, which the `grader` group sets from --lang, AMP_DOJO_LANG or the
    locale) where it was raised with a catalog message (`worded`); else as its English text."""

    exit_code = 2
    lang = "en"

    def __init__(self, message: str, said: tuple[str, dict] | None = None):
        super().__init__(message)
        self.said = said

    @classmethod
    def worded(cls, key: str, **params):
        from grader.wording.catalog import render

        return cls(render(key, params), (key, params))

    def format_message(self) -> str:
        if self.said is None:
            return self.message
        from grader.wording.catalog import render

        return render(self.said[0], self.said[1], self.lang)

    def show(self, file=None) -> None:
        from grader.wording.catalog import render

        message = render("cli.error", {"message": self.format_message()}, self.lang)
        click.echo(message, file=file, err=file is None, color=self.show_color)


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

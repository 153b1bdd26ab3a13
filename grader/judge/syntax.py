"""A submission that does not parse gets its verdict here, before any worker starts and without PyTorch:
`grader check` then answers a syntax error in a fraction of a second, and run() the same way."""

from __future__ import annotations

from grader.judge import static
from grader.results import GradingResult, SubmissionError
from grader.wording.catalog import say


def syntax_verdict(exercise_id: str, source: str, device: str, amp_dtype: str, sandbox: str) -> GradingResult | None:
    """The `syntax` error at its line and column, or None when `source` parses."""
    syntax = static.syntax_error(source)
    if syntax is None:
        return None
    message, line, text, column = syntax
    result = GradingResult(exercise_id, device, amp_dtype, sandbox=sandbox)
    result.error = SubmissionError(
        "syntax",
        say("error.at_line", line=line, message=say("error.raised", detail=message)),
        line,
        text,
        column=column,
    )
    return result

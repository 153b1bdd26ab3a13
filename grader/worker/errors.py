"""What went wrong in the worker, as data for the grader: the learner's
exception with the line of their file it came from, or one of the grader's own
errors by its catalog key."""

from __future__ import annotations

import traceback

from grader.worker.wire import failure


class StepError(Exception):
    def __init__(
        self,
        kind: str,
        message: str,
        line: int | None = None,
        source: str | None = None,
        tb: str = "",
        step: int | None = None,
        said=None,
    ):
        super().__init__(message)
        self.payload = {
            "kind": kind,
            "message": message,
            "line": line,
            "source_line": source,
            "traceback": tb,
            "step": step,
            "said": said,
        }

    @classmethod
    def worded(
        cls, kind: str, key: str, line: int | None = None, source: str | None = None, tb: str = "", **params
    ) -> StepError:
        """An error the grader words (grader/wording/catalog.py), so the learner reads it in their language: the
        worker sends the key and its parameters, never words of its own."""
        error = failure(kind, key, **params)
        return cls(kind, error["message"], line, source, tb, said=error["said"])


def learner_frame(exc: BaseException, path: str):
    """The innermost traceback frame in the learner's file, if any."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return frames[-1] if frames else None


def lesson_frame(exc: BaseException, path: str):
    """The frame of the lesson's own code (its workload.setup: a model's forward, a loader the learner calls)
    where `exc` arose, when that code is closer to the error than any line of the learner's: then the lesson
    failed, whatever the learner's line that called it. Frames of libraries (torch, pickle) between them say
    nothing of whose code it is; a learner function the lesson called back makes it the learner's again."""
    from grader.worker.workload import SETUP_FILENAME

    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == path:
            return None
        if frame.filename == SETUP_FILENAME:
            return frame
    return None


MESSAGE_CHARS = 2000  # of an exception's text: what the grader keeps of it


def describe_exception(exc: BaseException, path: str, kind: str = "exception") -> StepError:
    import torch

    frame = learner_frame(exc, path)
    text = str(exc)
    if len(text) <= MESSAGE_CHARS:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    else:  # the grader would cut it anyway (grader/judge/protocol.py); a reply of megabytes would not even reach it
        text = f"{text[:MESSAGE_CHARS]}... [cut: {len(text)} characters in all]"
        tb = "Traceback (most recent call last):\n" + "".join(traceback.format_tb(exc.__traceback__)) + text
    message = f"{type(exc).__name__}: {text}".strip()
    if (lesson := lesson_frame(exc, path)) is not None:  # no learner line: the learner did not write it
        return lesson_failure(lesson.lineno, message, tb[-4000:], frame.lineno if frame else None)
    where = (frame.lineno, frame.line) if frame else (None, None)
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or "can't allocate memory" in str(exc):
        return StepError.worded("oom", "error.oom", *where, tb[-4000:], detail=message[:200])
    return StepError(kind, message, *where, tb[-4000:])


def lesson_failure(line: int | None, message: str, tb: str = "", called_from: int | None = None) -> StepError:
    """The lesson's own code raised while the learner's ran: the grader could not grade it, and the instructor
    (grader validate) reads the line of workload.setup. The learner's line that called it is named in the
    message, never as the error's line: the lesson's code may have failed on a value that line passed it, which
    the grader cannot tell from a mistake of the lesson's own."""
    key, where = ("error.lesson_code", {"called_from": called_from}) if called_from else ("error.lesson_code_alone", {})
    error = StepError.worded("lesson", key, None, None, tb, setup_line=line, detail=message[:300], **where)
    error.payload["lesson_line"] = line
    return error


def call_failure(exc: BaseException, path: str, prepare: str | None = None) -> StepError:
    """What a call into the learner's code ended with: a training step, or the lesson's `prepare` function when
    named. sys.exit() is its own kind, at the learner's line."""
    if isinstance(exc, SystemExit):
        frame = learner_frame(exc, path)
        where = (frame.lineno, frame.line) if frame else (None, None)
        if prepare is not None:
            return StepError.worded("exit", "error.exit_prepare", *where, name=prepare)
        return StepError.worded("exit", "error.exit_step", *where)
    return describe_exception(exc, path)

"""Which lines of the learner's own file ran during the graded steps. A CPU grading never takes a branch written
for CUDA or for float16 (`if device_type == "cuda":`), and a verdict that passes must say which lines it never
saw run (grader/judge/unexercised.py words that). Python's line tracing sees the lines that run; a function
torch.compile traced runs as a compiled graph afterwards, so the lines dynamo read while tracing it are counted
too (dynamo's own `starts_line`, wrapped once dynamo is loaded).

The module's load (a helper object built at import runs its __init__ then), prepare and the graded (traced)
steps are watched: timed steps run without a trace function. What the
learner's process reports here is as trusted as the trace: it only decides which lines a note names, never a
check's status."""

from __future__ import annotations

import sys

MAX_LINES = 20_000  # a reply never carries more line numbers than a learner's file could have


class LinesRun:
    """A trace function for the learner's file alone: every other frame returns None at its call, so only the
    learner's frames pay for line events."""

    def __init__(self, path: str):
        self.path = path
        self.lines: set[int] = set()
        self._before = None
        self.replaced = False  # the learner's code set its own trace function: what ran is no longer known

    def _local(self, frame, event, arg):
        if event == "line" and frame.f_code.co_filename == self.path:
            self.lines.add(frame.f_lineno)
        return self._local

    def _global(self, frame, event, arg):
        if frame.f_code.co_filename != self.path:
            return None
        _watch_dynamo(self)
        if frame.f_lineno > 0:  # a module's frame starts at line 0 (its load is watched too)
            self.lines.add(frame.f_lineno)
        return self._local

    def __enter__(self):
        _watch_dynamo(self)
        self._before = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        self.replaced |= sys.gettrace() != self._global  # a bound method: equal, never the same object
        sys.settrace(self._before)
        return False

    def reply(self) -> list[int]:
        """The lines that ran, or none at all once the count could have missed some: the judge then names no
        line rather than name one that ran."""
        return [] if self.replaced else sorted(self.lines)[:MAX_LINES]


_WATCHED: list[LinesRun] = []


def unseen_by_dynamo() -> None:
    """Once torch._dynamo is loaded (grader/worker/lazy_dynamo.py runs this then, before anything compiles): a
    trace function is a Python call the interpreter makes inside every frame, compiled ones included, and dynamo
    would take its frames for the learner's (one more frame compiled, as a learner's own compile would count).
    Dynamo skips these code objects; the lines it traces still reach the count through starts_line."""
    from torch._dynamo.eval_frame import skip_code

    for fn in (LinesRun._global, LinesRun._local, _watch_dynamo):
        skip_code(fn.__code__)
    for run in _WATCHED[:1]:
        _watch_dynamo(run)


def _watch_dynamo(run: LinesRun) -> None:
    """Once torch._dynamo's symbolic interpreter is loaded, every line it traces of the learner's file is a
    line that runs, compiled."""
    if run not in _WATCHED:
        _WATCHED.append(run)
    module = sys.modules.get("torch._dynamo.symbolic_convert")
    cls = getattr(module, "InstructionTranslatorBase", None)
    if cls is None or getattr(cls.starts_line, "_lines_run", False):
        return
    starts_line = cls.starts_line

    def counted(self, lineno):
        code = getattr(self, "f_code", None)
        if code is not None:
            for watched in _WATCHED:
                if code.co_filename == watched.path:
                    watched.lines.add(lineno)
        return starts_line(self, lineno)

    counted._lines_run = True
    cls.starts_line = counted
    from torch._dynamo.eval_frame import skip_code

    skip_code(counted.__code__)

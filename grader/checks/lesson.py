"""Checks a lesson brings itself: the instructor's Python (trusted like the
reference) runs here, in the grading process, over evidence the grader already
collected. It sees numbers and call records, never the learner's objects, so
it can say "clip_grad_value_ ran with clip_value=0.5 after unscale_" without
trusting anything the submission says about itself."""

from __future__ import annotations

import ast
import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from grader.errors import ExerciseError
from grader.lesson.base import localize
from grader.results import FAIL, PASS, CheckResult, Finding, message_of
from grader.wording.catalog import own
from grader.worker.workload import lesson_code_error

FILENAME = "<lesson check>"


@dataclass
class LessonEvidence:
    """What a lesson check may look at. `traces` are the traced steps, each {"step", "events"}; an event is
    {"ev": kind, "line": learner line, ...} (docs/authoring.md lists the kinds and their fields)."""

    traces: list[dict]
    losses: list[float]
    baseline_losses: list[float]
    params: dict[str, torch.Tensor]
    baseline_params: dict[str, torch.Tensor]
    start: dict[str, torch.Tensor]
    device_type: str
    amp_dtype: str
    scales: list[float] = field(default_factory=list)
    overflow_step: int | None = None  # the first step the grader made overflow in every run (traced: "overflow")
    reference_scales: list[float] = field(default_factory=list)  # the reference solution's scale per step
    # per step that torch.compile worked in, dynamo's counts: {"step", "frames", "graphs", "graph_breaks"}, and
    # "model_runs": the calls of compiled graphs holding the lesson model's parameters (its forward, compiled)
    compiled: list[dict] = field(default_factory=list)
    overflow_steps: list[int] = field(default_factory=list)  # every step the grader made overflow, in order
    # what the lesson's setup code recorded with record(name, value), per step: {"step", "name", "value"(, "rank")}
    records: list[dict] = field(default_factory=list)
    baseline_records: list[dict] = field(default_factory=list)
    reference_records: list[dict] = field(default_factory=list)
    # the events of what the learner's entrypoint.prepare did, once (rank 0's), where the lesson has a prepare
    prepare_events: list[dict] = field(default_factory=list)
    # the submission's matmul/convolution FLOPs by the dtype they ran in, over the steps coverage counts (the
    # first 2), as its census reported them (float8 ones by their float8 dtype); empty without a coverage check
    flops: dict[str, int] = field(default_factory=dict)
    # the submission's source, as text (read, never run): where a call the trace never saw is written
    source: str = ""

    @property
    def events(self) -> list[dict]:
        """The events of the first traced step."""
        return self.traces[0]["events"] if self.traces else []

    def calls(self, kind: str) -> list[dict]:
        return [e for e in self.events if e.get("ev") == kind]

    def recorded(self, name: str, run: str = "submission") -> list[dict]:
        """The records of one name, in order: each {"step", "value"} (and "rank" with ranks). `run` is
        "submission", "baseline" or "reference"."""
        records = {"submission": self.records, "baseline": self.baseline_records, "reference": self.reference_records}
        return [{k: v for k, v in r.items() if k != "name"} for r in records[run] if r.get("name") == name]

    def function_line(self, name: str) -> int | None:
        """The line of `def name(` in the submission (a method's too; the first where several), to point a
        finding at the learner's function when no event names a line."""
        found = [n.lineno for n in _tree(self.source) if isinstance(n, FUNCTIONS) and n.name == name]
        return min(found) if found else None

    def call_lines(self, name: str) -> list[int]:
        """The lines where the submission writes a call to `name`: `name(...)` or `anything.name(...)`
        (`scaler.load_state_dict(...)` for "load_state_dict"), in order: where a call is written, ran or not."""
        calls = [n for n in _tree(self.source) if isinstance(n, ast.Call)]
        named = [c.lineno for c in calls if getattr(c.func, "id", getattr(c.func, "attr", None)) == name]
        return sorted(set(named))

    def lines_matching(self, pattern: str) -> list[int]:
        """The submission's lines (numbered from 1) whose text matches the regular expression, in order."""
        regex = re.compile(pattern)
        return [i for i, text in enumerate(self.source.splitlines(), 1) if regex.search(text)]

    def update(self, name: str) -> torch.Tensor:
        """What training changed in one parameter: p - p0."""
        return self.params[name] - self.start[name]

    def baseline_update(self, name: str) -> torch.Tensor:
        return self.baseline_params[name] - self.start[name]


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@lru_cache(maxsize=8)
def _tree(source: str) -> tuple[ast.AST, ...]:
    """Every node of the submission's syntax tree (empty where it does not parse: the grading said so)."""
    try:
        return tuple(ast.walk(ast.parse(source)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()


class MissingEvidence(KeyError):
    """A field the lesson check read is missing from what the worker reported (an event, a record). The
    worker's reports are the submission's: learner code shares its process and can emit an event of a known
    kind without the fields the grader's tracers always give it. That is the submission's malformed evidence
    (a protocol error), not a bug of the lesson, whose code is trusted to read the fields the docs list (a lesson
    that reads a field no event has fails `grader validate` on its own reference)."""


class _Reported(dict):
    def __missing__(self, key):
        raise MissingEvidence(key)


def _reported(value):
    """Worker-reported data, its dicts (at any depth) raising MissingEvidence for a field they lack."""
    if isinstance(value, dict):
        return _Reported({k: _reported(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_reported(v) for v in value]
    return value


def _as_reported(evidence: LessonEvidence) -> LessonEvidence:
    fields = ("traces", "compiled", "records", "prepare_events")  # the submission's (the trusted runs' are not)
    return dataclasses.replace(evidence, **{name: _reported(getattr(evidence, name)) for name in fields})


def finding(id: str, message, fix, line: int | None = None) -> Finding:
    """A mistake the lesson's check found; `message` and `fix` are strings, or {"en": ..., "it": ..., "id": ...}
    so that learners read them in their language."""
    text = {"message": own(message).to_dict(), "fix": own(fix).to_dict()}
    return Finding(id, localize(message), localize(fix), line if isinstance(line, int) else None, text=text)


@lru_cache(maxsize=64)
def _compiled(check_id: str, source: str):
    namespace = {"__name__": f"amp_dojo_check_{check_id}", "finding": finding, "torch": torch}
    try:
        exec(compile(source, FILENAME, "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001
        raise _lesson_error(check_id, exc, "while it was loaded") from None
    if not callable(namespace.get("check")):
        raise ExerciseError(f"lesson check {check_id!r}: its python must define `def check(ev):`")
    return namespace["check"]


def _lesson_error(check_id: str, exc: BaseException, when: str) -> ExerciseError:
    line, detail = lesson_code_error(exc, FILENAME)
    where = f" at line {line} of its python" if line else ""
    err = ExerciseError(
        f"lesson check {check_id!r} failed {when}{where}: {detail} (this is the lesson's fault, "
        "not the submission's; run `grader validate` on it)"
    )
    err.line = line  # inside the check's python block, for `grader validate` to turn into a line of the file
    return err


def compile_check(spec) -> None:
    """Fails early (for `grader validate`) when the check's code does not even load."""
    _compiled(spec.id, spec.python)


def check(spec, evidence: LessonEvidence) -> CheckResult:
    fn = _compiled(spec.id, spec.python)
    try:
        out = fn(_as_reported(evidence))
    except MissingEvidence:
        raise  # not a GraderError: the judge words it as the submission's malformed reply
    except BaseException as exc:  # noqa: BLE001
        raise _lesson_error(spec.id, exc, "while judging") from None
    findings = [out] if isinstance(out, Finding) else list(out or [])
    if not all(isinstance(f, Finding) for f in findings):
        raise ExerciseError(
            f"lesson check {spec.id!r}: check(ev) must return None, finding(...) or a list of "
            f"findings, not {type(out).__name__}"
        )
    if not findings:
        return CheckResult(spec.id, PASS, own(spec.title), {"mistakes": []}, weight=spec.weight)
    return CheckResult(
        spec.id,
        FAIL,
        message_of(findings[0]),
        {"mistakes": [f.id for f in findings]},
        findings=findings,
        weight=spec.weight,
    )


def partial_check(spec, evidence: LessonEvidence) -> CheckResult | None:
    """A lesson check over what a failed run left (grader/judge/evaluate.crash_evidence): the calls made before
    the code failed, and what the lesson recorded. Its findings often name the cause (no create_graph, then a second backward through
    a freed graph); where it passes on that evidence it passes. A check that reads more than there is (the
    parameters) is not run, nor one with no calls and no records to read."""
    if not evidence.traces and not evidence.records:
        return None
    try:
        return check(spec, evidence)
    except Exception:  # noqa: BLE001 - it looked at losses or parameters, which a failed run does not have
        return None

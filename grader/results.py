"""The verdict as data. A learner's mistake is a `CheckResult` with a message,
never an exception; `GradingResult.to_dict()` is the documented JSON document
(docs/results.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from grader.wording.catalog import Said, render, say, words

PASS, FAIL, ERROR, NOT_APPLICABLE = "pass", "fail", "error", "not_applicable"
SCHEMA_VERSION = 1


@dataclass
class Finding:
    """One diagnosed mistake: what is wrong, where, and how to fix it."""

    id: str
    message: str
    fix: str
    line: int | None = None
    severity: str = "error"  # "error" fails the check, "info" is advice only
    # The message and fix before they were put into words ({"key", "params"} of grader/wording/catalog.py, or a
    # lesson's own {"en": ..., "it": ...}), so that they can be shown in the learner's language.
    text: dict | None = None


@dataclass
class CheckResult:
    id: str
    status: str
    message: str
    measured: dict[str, Any] = field(default_factory=dict)
    threshold: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)
    weight: float = 1.0
    parts: list[dict] = field(default_factory=list)  # the message before it was put into words

    def __post_init__(self):
        if not isinstance(self.message, str):  # a Said, or several (grader/wording/catalog.py)
            self.message, self.parts = words(self.message)


@dataclass
class SubmissionError:
    kind: str
    message: str
    line: int | None = None
    source_line: str | None = None
    step: int | None = None
    parts: list[dict] = field(default_factory=list)
    column: int | None = None  # a syntax error's: 1-based column of source_line where Python stopped reading

    def __post_init__(self):
        if not isinstance(self.message, str):
            self.message, self.parts = words(self.message)


@dataclass
class GradingResult:
    exercise: str
    device: str
    amp_dtype: str
    checks: list[CheckResult] = field(default_factory=list)
    error: SubmissionError | None = None
    plots: dict[str, Any] = field(default_factory=dict)
    output: str = ""
    sandbox: str = "local"
    duration_s: float = 0.0
    notes: list[Finding] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.error is not None:
            return ERROR
        if any(c.status in (FAIL, ERROR) for c in self.checks):
            return FAIL
        return PASS

    @property
    def score(self) -> float:
        applicable = [c for c in self.checks if c.status != NOT_APPLICABLE]
        total = sum(c.weight for c in applicable)
        if self.error is not None or not total:
            return 0.0
        return round(sum(c.weight for c in applicable if c.status == PASS) / total, 4)

    def check(self, check_id: str) -> CheckResult | None:
        return next((c for c in self.checks if c.id == check_id), None)

    def to_dict(self) -> dict:
        data = asdict(self)
        return {"schema_version": SCHEMA_VERSION, "status": self.status, "score": self.score, **data}


def finding(
    id: str,
    line: int | None = None,
    severity: str = "error",
    key: str | None = None,
    fix_key: str | None = None,
    **params,
) -> Finding:
    """A diagnosed mistake worded from the catalog: `key` (default: the id) and `key.fix`, or `fix_key` where the
    lesson rules that fix out (autocast, in a lesson whose mixed precision is FSDP's policy)."""
    key = key or id
    said = say(key, **params)
    fix_key = fix_key or f"{key.split('.')[0]}.fix"
    return Finding(
        id,
        str(said),
        render(fix_key, params),
        line,
        severity,
        text={"message": said.to_dict(), "fix": Said(fix_key, params).to_dict()},
    )


def advice_said_once(checks: list[CheckResult]) -> None:
    """Leaves out advice (an info finding) on a line that a failing finding already names: the failure says what
    is wrong there, with its fix (torch.compile in every step was once said by the compiled check's failure, by
    call_order's advice in a passed row, and again in the notes)."""
    named = {f.line for c in checks for f in c.findings if f.severity != "info" and f.line is not None}
    for c in checks:
        c.findings = [f for f in c.findings if f.severity != "info" or f.line is None or f.line not in named]


def message_of(f: Finding) -> Said:
    """A finding's message, still unworded, to be a check's message."""
    return Said.of((f.text or {}).get("message") or f.message)

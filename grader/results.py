"""The verdict as data. A learner's mistake is a `CheckResult` with a message,
never an exception; `GradingResult.to_dict()` is the documented JSON document
(docs/results.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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


@dataclass
class CheckResult:
    id: str
    status: str
    message: str
    measured: dict[str, Any] = field(default_factory=dict)
    threshold: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)
    weight: float = 1.0


@dataclass
class SubmissionError:
    kind: str
    message: str
    line: int | None = None
    source_line: str | None = None
    step: int | None = None


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

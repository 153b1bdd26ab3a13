"""Looking up calls in a step's trace (grader/tracing.py events), for every module of call-order rules."""

from __future__ import annotations


def every(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["ev"] == kind]


def first(events: list[dict], kind: str, **match) -> dict | None:
    """The first call of `kind` whose fields equal `match`, or None."""
    return next((e for e in events if e["ev"] == kind and all(e.get(k) == v for k, v in match.items())), None)

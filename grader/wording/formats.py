"""The same verdict in other platforms' result contracts, so AMP Dojo can be
their external grader. Not-applicable checks are never reported as passed."""

from __future__ import annotations

from grader.results import NOT_APPLICABLE, PASS, GradingResult


def _check_text(check) -> str:
    lines = [check.message]
    for f in check.findings:
        where = f"line {f.line}: " if f.line else ""
        lines.append(f"- {where}{f.message}. Fix: {f.fix}")
    return "\n".join(lines)


def native(result: GradingResult) -> dict:
    return result.to_dict()


def prairielearn(result: GradingResult) -> dict:
    tests = []
    for c in result.checks:
        applicable = c.status != NOT_APPLICABLE
        tests.append(
            {
                "name": c.id,
                "description": c.id.replace("_", " "),
                "points": c.weight if c.status == PASS else 0,
                "max_points": c.weight if applicable else 0,
                "message": _check_text(c) if applicable else f"not applicable: {c.message}",
                "output": "",
            }
        )
    message = result.error.message if result.error else f"{result.status}: score {result.score:.0%}"
    return {
        "gradable": True,
        "score": result.score,
        "message": message,
        "output": result.output[-10000:],
        "tests": tests,
    }


def exercism(result: GradingResult) -> dict:
    doc = {"version": 2, "status": result.status, "tests": []}
    if result.error:
        doc["message"] = result.error.message
    for c in result.checks:
        if c.status == NOT_APPLICABLE:
            continue
        doc["tests"].append(
            {
                "name": c.id,
                "status": c.status if c.status in ("pass", "fail") else "error",
                "message": None if c.status == PASS else _check_text(c),
                "output": None,
            }
        )
    return doc


FORMATS = {"native": native, "prairielearn": prairielearn, "exercism": exercism}

"""A verdict shown in the real lesson page without grading: the browser's calls for a submission (POST, its
stream, GET) are answered with a stored result, worded by the grader in the page's language as the web app
words it (grader/wording/phrases.py `localized`). The page's own code follows it (the stream refused, then
polling) and draws it: what is tested is the page, and a grading per lesson would cost minutes of the suite."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from grader.lesson.loader import load_exercise
from grader.wording.phrases import localized

from .test_browser import GRADING_TIMEOUT_MS

SID = "0123456789abcdef"


def said(key: str, **params) -> dict:
    return {"key": key, "params": params}


def finding(key: str, fix_key: str, line: int, **params) -> dict:
    """A finding as the grader stores it: English words, and the key that words it in another language."""
    return {
        "id": key,
        "message": key,
        "fix": fix_key,
        "line": line,
        "severity": "error",
        "text": {"message": said(key, **params), "fix": said(fix_key)},
    }


def failing_result(lesson: str) -> dict:
    """Every check of the lesson failed, each with one of the catalog's long findings and a long figure: the
    widest a checks table of this lesson gets (a title, a verdict with its finding and fix, a measurement)."""
    exercise = load_exercise(lesson)
    long_finding = finding(
        "memory.fail", "compile_every_step.fix", 12, peak="1.2 GiB", ratio=1.5, base="800.0 MiB", limit=1.1
    )
    checks = [
        {
            "id": spec.id,
            "status": "fail",
            "message": "",
            "parts": [said("memory.fail", peak="1.2 GiB", ratio=1.5, base="800.0 MiB", limit=1.1)],
            "measured": {"toward_reference": 0.125, "rel_err": 0.5, "step": 3},
            "threshold": {"rel_err": 0.02},
            "findings": [long_finding],
            "weight": 1.0,
        }
        for spec in exercise.checks
    ]
    return {
        "exercise": lesson,
        "device": "cpu",
        "amp_dtype": "bfloat16",
        "status": "fail",
        "score": 0.0,
        "checks": checks,
        "error": None,
        "notes": [],
        "plots": {},
        "output": "",
    }


def show_stored(page, result: dict, lang: str, events: tuple = ()) -> None:
    """Runs the editor's code, and answers the page's calls as a server would for a submission that ran
    `events` (progress, check) and ended with `result` (a stored, unworded result document)."""
    worded = localized(result, lang)
    detail = {
        "id": SID,
        "status": "done",
        "result_status": result["status"],
        "score": result.get("score"),
        "error": None,
        "cancelled": False,
        "position": 0,
        "code": None,
        "events": [{"id": i + 1, "type": t, "data": d} for i, (t, d) in enumerate(events)],
        "result": worded,
    }
    urls = {
        "self": f"/api/submissions/{SID}",
        "stream": f"/api/submissions/{SID}/stream",
        "cancel": f"/api/submissions/{SID}/cancel",
        "page": f"/submissions/{SID}",
    }

    def submitted(route):
        if route.request.method != "POST":  # the history's GET
            return route.continue_()
        route.fulfill(
            status=202,
            content_type="application/json",
            body=json.dumps({"id": SID, "status": "queued", "position": 1, "urls": urls}),
        )

    page.route(re.compile(r".*/api/lessons/[^/]+/submissions$"), submitted)
    page.route(f"**/api/submissions/{SID}/stream*", lambda route: route.fulfill(status=429, body="busy"))
    page.route(
        f"**/api/submissions/{SID}?*",
        lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(detail)),
    )
    page.get_by_test_id("run-button").click()
    expect(page.get_by_test_id("result-status")).to_have_attribute(
        "data-status", result["status"], timeout=GRADING_TIMEOUT_MS
    )


def timeout_result(lesson: str, line: int = 11) -> dict:
    """The code ran too long at `line`: the error says so, and every check is 'not run' (what it left unrun)."""
    exercise = load_exercise(lesson)
    checks = [
        {
            "id": spec.id,
            "status": "error",
            "message": "",
            "parts": [said("check.not_run", kind="timeout")],
            "measured": {},
            "threshold": None,
            "findings": [],
            "weight": 1.0,
        }
        for spec in exercise.checks
    ]
    error = {
        "kind": "timeout",
        "message": "",
        "parts": [said("error.timeout_at", seconds=32, line=line)],
        "line": line,
        "source_line": None,
        "step": 2,
    }
    return {
        "exercise": lesson,
        "device": "cpu",
        "amp_dtype": "bfloat16",
        "status": "error",
        "score": 0.0,
        "checks": checks,
        "error": error,
        "notes": [],
        "plots": {},
        "output": "",
    }


def finding_result(lesson: str, line: int) -> dict:
    """The first check failed with one finding at `line` whose message and fix both hold `code`."""
    spec = load_exercise(lesson).checks[0]
    named = {
        "id": "accumulate_missing",
        "message": "",
        "fix": "",
        "line": line,
        "severity": "error",
        "text": {"message": said("accumulate_missing", n=4), "fix": said("accumulate_missing.fix")},
    }
    check = {
        "id": spec.id,
        "status": "fail",
        "message": "",
        "parts": [said("accumulate_missing", n=4)],
        "measured": {},
        "threshold": None,
        "findings": [named],
        "weight": 1.0,
    }
    return {
        "exercise": lesson,
        "device": "cpu",
        "amp_dtype": "bfloat16",
        "status": "fail",
        "score": 0.0,
        "checks": [check],
        "error": None,
        "notes": [],
        "plots": {},
        "output": "",
    }


def advice_result(lesson: str) -> dict:
    """A passed check whose advice (an info finding) the result's notes list too, as the grader stores them."""
    advice = {
        "id": "compile_every_step",
        "message": "",
        "fix": "",
        "line": 10,
        "severity": "info",
        "text": {"message": said("compile_every_step", steps=8), "fix": said("compile_every_step.fix")},
    }
    checks = [
        {
            "id": spec.id,
            "status": "pass",
            "message": "",
            "parts": [],
            "measured": {},
            "threshold": None,
            "findings": [advice] if i == 0 else [],
            "weight": 1.0,
        }
        for i, spec in enumerate(load_exercise(lesson).checks)
    ]
    return {
        "exercise": lesson,
        "device": "cpu",
        "amp_dtype": "bfloat16",
        "status": "pass",
        "score": 1.0,
        "checks": checks,
        "error": None,
        "notes": [advice],
        "plots": {},
        "output": "",
    }

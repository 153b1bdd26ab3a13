"""Bounds on what a worker reports about the learner's code. Everything a worker sends is untrusted (learner code
shares its process and can rewrite any of it), and some of it becomes findings, figures and stored results: an
exception message of megabytes, a line number of 31 digits or a trace event holding a huge string would flow into
the result document, the database and every page that shows it. So each field is rebuilt here from the reply:
lines must fall inside the submitted source (and its text is read from that source, never from the reply),
numbers must be finite and in range, strings are cut to stated caps, and lists to stated lengths."""

from __future__ import annotations

import math

MAX_MESSAGE_CHARS = 4000        # an error message as the learner reads it (the worker cuts its own at 2000)
MAX_TRACEBACK_CHARS = 20_000    # the traceback kept with an error
MAX_SOURCE_LINE_CHARS = 300     # the learner's line shown beside an error
MAX_EVENT_STRING_CHARS = 200    # a string inside a trace event (a function's name, a dtype, ...)
MAX_EVENT_LIST = 32             # a list inside a trace event (dtypes of a function's inputs)
MAX_EVENT_FIELDS = 16
MAX_NUMBER = 1e300              # beyond it a float is no measurement
MAX_INT = 2**53                 # an exact integer in JSON and in every database column we store


def cut(text, limit: int) -> str:
    """`text` as a string of at most about `limit` characters, the cut marked."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text)} characters in all]"


def source_line(code: str, line) -> int | None:
    """`line` if it is a line of `code` (1-based), else None: a worker's line number is only a claim."""
    if isinstance(line, int) and not isinstance(line, bool) and 1 <= line <= code.count("\n") + 1:
        return line
    return None


def line_text(code: str, line: int | None) -> str | None:
    if line is None:
        return None
    lines = code.splitlines()
    return cut(lines[line - 1].strip() if line <= len(lines) else "", MAX_SOURCE_LINE_CHARS)


def _value(v):
    """A trace event's field value: bools, None, bounded numbers, cut strings, short flat lists of those."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v if -MAX_INT <= v <= MAX_INT else None
    if isinstance(v, float):
        return v if not math.isfinite(v) or abs(v) <= MAX_NUMBER else math.copysign(math.inf, v)
    if isinstance(v, str):
        return cut(v, MAX_EVENT_STRING_CHARS)
    if isinstance(v, list):
        return [_value(x) for x in v[:MAX_EVENT_LIST] if not isinstance(x, (list, dict))]
    return None


def event(e: dict, code: str) -> dict:
    """One trace event rebuilt: its kind, a line inside the source, and at most a few plain fields."""
    out = {"ev": cut(e["ev"], 40), "line": source_line(code, e.get("line"))}
    for k, v in list(e.items())[:MAX_EVENT_FIELDS]:
        if k not in out and isinstance(k, str) and len(k) <= 40:
            out[k] = _value(v)
    return out


def trace(t: dict, code: str) -> dict:
    """A traced step rebuilt around its cleaned events (the caller has checked that `events` is a list of
    dicts with a string `ev`)."""
    out = {k: _value(v) for k, v in t.items() if k in ("step", "phase", "device", "rank", "partial")}
    out["events"] = [event(e, code) for e in t["events"]]
    if "param_dtypes" in t:
        dtypes = t["param_dtypes"]
        out["param_dtypes"] = [cut(d, 40) for d in dtypes[:MAX_EVENT_LIST] if isinstance(d, str)] if isinstance(
            dtypes, list) else []
    return out


def error(e: dict, code: str, max_events: int) -> dict:
    """A worker's error report with every learner-controlled field bounded; the line's text comes from `code`.
    (The caller has checked kind and message; `said` is checked by runner.worded_error.)"""
    line = source_line(code, e.get("line"))
    out = {**{k: e[k] for k in ("kind", "said", "rank", "phase") if k in e},
           "message": cut(e["message"], MAX_MESSAGE_CHARS),
           "traceback": cut(e.get("traceback") or "", MAX_TRACEBACK_CHARS) if isinstance(
               e.get("traceback", ""), str) else "",
           "line": line, "source_line": line_text(code, line),
           "step": e["step"] if isinstance(e.get("step"), int) and 0 <= e["step"] < 10_000 else None}
    events = e.get("events")
    if isinstance(events, list) and all(isinstance(x, dict) and isinstance(x.get("ev"), str) for x in events):
        out["events"] = [event(x, code) for x in events[:max_events]]
    return out

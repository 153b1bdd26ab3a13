"""The worker's half of the protocol: one JSON object per line on stdout, and
errors as keys of the grader's message catalog with their parameters. The
worker never words a message itself (the catalog is the judge's); the judge
checks each reply and words it (grader/judge/protocol.py)."""

from __future__ import annotations

import json
import signal


def failure(kind: str, key: str, at_line: int | None = None, **params) -> dict:
    """An error the grader words from `key` and `params`; `at_line` is the learner's line. Its "message" is the
    key with its parameters, for logs: the judge replaces it with the worded text."""
    return {
        "kind": kind,
        "message": key + (f" {json.dumps(params, default=str)}" if params else ""),
        "said": {"key": key, "params": params},
        "line": at_line,
    }


def parse_reply(line: bytes | str) -> dict | None:
    """One protocol line as a reply object; None for anything else (bad JSON, bad UTF-8, [[[[…, not an object)."""
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return reply if isinstance(reply, dict) else None


def signal_name(number: int) -> str:
    """SIGSEGV, SIGRTMIN+6, or 'signal 99': any number a process may die of, including real-time signals, which
    signal.Signals does not list."""
    try:
        return signal.Signals(number).name
    except ValueError:
        pass
    low, high = getattr(signal, "SIGRTMIN", 0), getattr(signal, "SIGRTMAX", -1)
    if low <= number <= high:
        return f"SIGRTMIN+{number - low}"
    return f"signal {number}"


def death_failure(code: int | None, oom: bool) -> dict:
    """How a worker process ended, as its error: `code` is its exit status, or minus the signal that killed it."""
    if oom:
        return failure("oom", "error.killed_oom")
    if code is not None and code < 0:
        return failure("crash", "error.killed_signal", signal=signal_name(-code))
    return failure("exit", "error.exited", status=code)

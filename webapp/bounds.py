"""What the web app keeps of what a grading worker reports, whatever it holds.

A result document and its events come from a process that ran learner code: a
value the learner rewrote (a 31-digit line number, a 10 MB exception message,
NaN, a list nested a thousand deep) must neither fail the insert (so that the
collector retries it forever) nor make every later view send megabytes. So,
before anything is stored:

- values become plain JSON: NaN and infinities None, integers clamped to a
  signed 64-bit range (a finding's `line` to a positive 32-bit one or None, the
  `findings.line` column), other objects their (cut) repr, nesting and list
  lengths bounded;
- the score is a number in 0..1 or None, the status one of the grader's three;
- a document over MAX_RESULT_BYTES is cut, not refused: strings are shortened
  with a visible "[truncated: N bytes]", the plots thinned then dropped, and the
  top-level `truncated` says so; the checks' ids, statuses and messages stay, so
  the learner still sees the verdict."""

from __future__ import annotations

import json
import math
import numbers
import re

INT64 = 2**63 - 1
LINE_MAX = 2**31 - 1  # findings.line is an INTEGER column: 32 bits on PostgreSQL
MAX_DEPTH = 24  # real documents nest 6 deep (plots.profile.given.top_ops[i].dtypes)
MAX_ITEMS = 5000  # per list or object, before any size cap
NODE_BUDGET = 200_000  # values visited per document: a list of lists of lists stays cheap
MIN_RESULT_BYTES = 4096
STATUSES = ("pass", "fail", "error")
EVENT_TYPES = ("progress", "check")  # `done` is the app's own (webapp/collector.py)
TOO_DEEP = "[truncated: nested too deep]"
CUT = re.compile(r"… \[truncated: (\d+) bytes\]$")


def size(value) -> int:
    """Bytes of `value` as the app stores it (json.dumps, ASCII escapes)."""
    return len(json.dumps(value))


def marker(text: str, keep: int) -> str:
    """`text` cut to `keep` characters, saying how long it was (a text cut before: how long it was then)."""
    if len(text) <= keep:
        return text
    earlier = CUT.search(text)
    length = int(earlier.group(1)) if earlier else len(text.encode("utf-8", "replace"))
    return f"{text[:keep]}… [truncated: {length} bytes]"


class _Cleaner:
    """One pass over a value: plain JSON, bounded. `strings`/`items` are the longest kept."""

    def __init__(self, strings: int, items: int = MAX_ITEMS, numbers_kept: int | None = None):
        self.strings, self.items, self.numbers_kept = strings, items, numbers_kept
        self.budget = NODE_BUDGET
        self.cut = False

    def value(self, value, depth: int = 0, key: str | None = None):
        self.budget -= 1
        if self.budget < 0:
            self.cut = True
            return None
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, numbers.Integral):
            return self.integer(int(value), key)
        if isinstance(value, numbers.Real):
            number = float(value)
            return number if math.isfinite(number) else None
        if isinstance(value, str):
            return self.string(value)
        if depth >= MAX_DEPTH:
            self.cut = True
            return TOO_DEEP
        if isinstance(value, dict):
            return self.mapping(value, depth)
        if isinstance(value, (list, tuple)):
            return self.sequence(list(value), depth)
        return self.string(repr(value)[: self.strings + 1])

    def integer(self, number: int, key: str | None):
        if key == "line":
            return number if 0 < number <= LINE_MAX else None
        return max(-INT64, min(INT64, number))

    def string(self, text: str) -> str:
        text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate would not encode later
        text = text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL
        if len(text) > self.strings:
            self.cut = True
            return marker(text, self.strings)
        return text

    def mapping(self, value: dict, depth: int) -> dict:
        out = {}
        for n, (k, v) in enumerate(value.items()):
            if n >= self.items or self.budget <= 0:
                self.cut = True
                break
            name = k if isinstance(k, str) else str(k)
            out[marker(name, 200)] = self.value(v, depth + 1, name)
        return out

    def sequence(self, value: list, depth: int) -> list:
        if self.numbers_kept is not None and len(value) > self.numbers_kept and _numeric(value):
            step = math.ceil(len(value) / self.numbers_kept)  # a thinned series still draws the curve
            value = value[::step]
            self.cut = True
        if len(value) > self.items:
            value = value[: self.items]
            self.cut = True
        out = []
        for v in value:
            if self.budget <= 0:
                self.cut = True
                break
            out.append(self.value(v, depth + 1))
        return out


def _numeric(items: list) -> bool:
    return all(isinstance(v, numbers.Real) for v in items[:50])


def _verdict(doc: dict) -> dict:
    """The columns beside the document read these: a score in 0..1 (or None), a known status."""
    score = doc.get("score")
    doc["score"] = (
        min(1.0, max(0.0, float(score)))
        if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)
        else None
    )
    if doc.get("status") not in STATUSES:
        doc["status"] = "error"
    return doc


def _note(doc: dict, original: int, limit: int, plots: str) -> dict:
    doc["truncated"] = {"bytes": original, "limit": limit, "plots": plots}
    return doc


def _skeleton(doc: dict, limit: int) -> dict:
    """The verdict alone: each check's id, status and message, as many as fit."""
    checks = [c for c in doc.get("checks") or [] if isinstance(c, dict)]
    keep = {
        "schema_version": doc.get("schema_version"),
        "exercise": doc.get("exercise"),
        "status": doc["status"],
        "score": doc["score"],
        "plots": {},
        "output": "",
        "notes": [],
        "error": _Cleaner(400, items=20).value(doc.get("error")),
    }
    shown = [
        {
            "id": _Cleaner(100).value(c.get("id")),
            "status": _Cleaner(20).value(c.get("status")),
            "message": _Cleaner(400).value(c.get("message")),
            "findings": [],
        }
        for c in checks[:200]
    ]
    while True:
        out = {**keep, "checks": shown}
        if size(out) <= limit - 200 or not shown:
            return out
        shown = shown[: len(shown) // 2]


def result(value, limit: int) -> dict:
    """The result document to store: plain JSON, at most `limit` bytes (MAX_RESULT_BYTES)."""
    limit = max(MIN_RESULT_BYTES, int(limit))
    cleaner = _Cleaner(limit)
    doc = cleaner.value(value) if isinstance(value, dict) else {"status": "error", "checks": []}
    _verdict(doc)
    original = size(doc)
    if original <= limit and not cleaner.cut:
        return doc
    if original <= limit:
        return _note(doc, original, limit, "kept")
    for strings, points in ((limit // 8, 2000), (limit // 32, 500), (limit // 128, 100), (256, 50), (120, 20)):
        small = _verdict(_Cleaner(strings, items=max(20, strings // 8), numbers_kept=points).value(doc))
        if size(small) <= limit - 200:
            return _note(small, original, limit, "thinned")
        small["plots"] = {}
        if size(small) <= limit - 200:
            return _note(small, original, limit, "dropped")
    return _note(_skeleton(doc, limit), original, limit, "dropped")


def event(raw, limit: int) -> tuple[str, dict]:
    """(type, data) of one worker event, the data at most `limit` bytes as JSON."""
    raw = raw if isinstance(raw, dict) else {}
    kind = raw.get("type") if raw.get("type") in EVENT_TYPES else "progress"
    data = raw.get("data")
    data = _Cleaner(limit).value(data) if isinstance(data, dict) else {"stage": "unknown"}
    if size(data) <= limit:
        return kind, data
    small = _Cleaner(200, items=20, numbers_kept=20).value(data)
    if size(small) <= limit:
        return kind, small
    return kind, {k: small[k] for k in ("stage", "check", "status") if k in small}


def plain(value, strings: int = 200):
    """Any value as plain, small JSON (a heartbeat, compared for change only)."""
    return _Cleaner(strings, items=50).value(value)


def text(value, limit: int = 2000) -> str | None:
    """A short string the worker sent (a failure's reason, its name), or None."""
    if value is None:
        return None
    return _Cleaner(limit).string(value if isinstance(value, str) else repr(value)[: limit + 1])

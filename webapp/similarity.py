"""How alike learners' submissions of one lesson are, as evidence for a person to read, never a verdict.

Each submission becomes a list of normalised tokens (Python's tokenizer: comments and blank lines dropped, every
name that is not a keyword or a builtin written as one placeholder, every string and number as another, so that
renaming variables or rewording strings changes nothing). Its fingerprints are the winnowed hashes of its k-token
runs (Schleimer, Wilkerson and Aiken's winnowing, as MOSS does); the fingerprints of the lesson's starter code
are taken out first, so that what everyone was given counts for nobody. Two submissions' similarity is the share
of all their fingerprints that they have in common (Jaccard: two copies are 1, a solution and a longer one that
contains it less); the page also shows how much of each one the other holds, as MOSS does, so that a copy padded
with extra code still reads as one.

Pairs are found through an index from fingerprint to submissions, so a class of 200 costs what their shared
fingerprints cost, not 19,900 set comparisons; a fingerprint that most of the class has (an idiom of the
lesson, not a copy) is dropped, as MOSS drops common passages."""

from __future__ import annotations

import builtins
import io
import keyword
import tokenize
from dataclasses import dataclass

K = 12  # tokens per run: shorter runs match idioms everyone writes, longer ones miss copies with small edits
WINDOW = 6  # winnowing window: any shared run of K + WINDOW - 1 tokens is sure to share a fingerprint
MAX_CODE = 64 * 1024
_SKIP = (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER)
_KEEP_NAMES = set(keyword.kwlist) | set(dir(builtins))


def tokens(code: str) -> list[tuple[str, int]]:
    """(normalised token, its line) of the code; what does not tokenize ends the list where it stops."""
    out: list[tuple[str, int]] = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(code[:MAX_CODE]).readline):
            if t.type in _SKIP:
                continue
            if t.type == tokenize.NAME:
                text = t.string if t.string in _KEEP_NAMES else "V"
            elif t.type == tokenize.STRING or t.type == tokenize.NUMBER:
                text = "S" if t.type == tokenize.STRING else "0"
            elif t.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE):
                text = tokenize.tok_name[t.type][0]
            else:
                text = t.string
            out.append((text, t.start[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # a learner's broken code is compared as far as it reads
    return out


def _runs(toks: list[tuple[str, int]]) -> list[int]:
    """The hash of each run of K tokens. Python's own hash of a tuple of strings: fast, and the same within one
    process, which is where every comparison happens (one report, or one pair's page)."""
    texts = [t for t, _ in toks]
    return [hash(tuple(texts[i : i + K])) for i in range(len(texts) - K + 1)]


def given(starter: str) -> set[int]:
    """Every run of the starter code (not only its winnowed ones): none of it may count as shared."""
    return set(_runs(tokens(starter))) if starter else set()


def fingerprints(code: str) -> dict[int, list[tuple[int, int]]]:
    """Winnowed fingerprint -> the (first line, last line) spans of code it stands for."""
    toks = tokens(code)
    hashes = _runs(toks)
    chosen: dict[int, list[tuple[int, int]]] = {}
    last = -1
    for start in range(max(0, len(hashes) - WINDOW + 1) or (1 if hashes else 0)):
        window = hashes[start : start + WINDOW]
        low = min(window)
        at = start + max(i for i, h in enumerate(window) if h == low)  # the rightmost minimum, as the paper says
        if at != last:
            chosen.setdefault(hashes[at], []).append((toks[at][1], toks[at + K - 1][1]))
            last = at
    return chosen


@dataclass(frozen=True)
class Pair:
    a: str  # submission ids
    b: str
    score: float  # shared fingerprints / all fingerprints of the two, 0..1
    shared: int
    of_a: float  # the share of a's fingerprints that b has too
    of_b: float


def rank(codes: dict[str, str], starter: str = "", limit: int = 50) -> list[Pair]:
    """The `limit` most similar pairs among `codes` (submission id -> code), most similar first."""
    starter_runs = given(starter)
    prints = {sid: set(fingerprints(code)) - starter_runs for sid, code in codes.items()}
    ids = sorted(prints)
    pairs = []
    for i, a in enumerate(ids):
        mine = prints[a]
        for b in ids[i + 1 :]:
            n = len(mine & prints[b])  # a C-level intersection of two small sets: ~1 µs
            if n:
                pairs.append(Pair(a, b, n / (len(mine) + len(prints[b]) - n), n, n / len(mine), n / len(prints[b])))
    pairs.sort(key=lambda p: (-p.score, -p.shared, p.a, p.b))
    return pairs[:limit]


def overlapping_lines(code: str, other: str, starter: str = "") -> set[int]:
    """The lines of `code` whose fingerprints `other` has too (the starter's excluded): what to highlight."""
    theirs = set(fingerprints(other)) - given(starter)
    lines: set[int] = set()
    for h, spans in fingerprints(code).items():
        if h in theirs:
            for first, last in spans:
                lines.update(range(first, last + 1))
    return {n for n in lines if n <= len(code.splitlines())}  # a final DEDENT sits on the line after the last


def run_report(payload: dict) -> dict:
    """The queue task's work ({"codes": {sid: code}, "starter": ...} in; the ranked pairs and the time out): all
    it needs travels in the payload, so a grading worker that has only the queue computes it."""
    import time

    start = time.perf_counter()
    pairs = rank(payload["codes"], payload.get("starter", ""), int(payload.get("limit", 50)))
    return {
        "pairs": [[p.a, p.b, round(p.score, 4), p.shared, round(p.of_a, 4), round(p.of_b, 4)] for p in pairs],
        "seconds": round(time.perf_counter() - start, 3),
    }

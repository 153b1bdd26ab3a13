"""Whether two versions of a lesson's Python are the same code: a starter translated for learners of another
language may reword its comments, never its code (the grader profiles and mutates the English one)."""

from __future__ import annotations

import io
import tokenize

_WORDING = (tokenize.COMMENT, tokenize.NL)  # a comment, or a line that holds nothing else
ONLY = "a translation may change comments only"


def code_tokens(source: str) -> list[tokenize.TokenInfo]:
    """The tokens that make up the code: everything but comments and comment-only lines. Raises
    tokenize.TokenError or SyntaxError (an unclosed bracket, a bad dedent) for text that is not Python."""
    return [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in _WORDING]


def first_code_difference(original: str, translation: str) -> str | None:
    """None where `translation` is `original` with other comments; else what differs, naming its line."""
    try:
        theirs = code_tokens(translation)
    except (tokenize.TokenError, SyntaxError) as exc:
        return f"is not Python ({exc.args[0]})"
    ours = code_tokens(original)
    for mine, other in zip(ours, theirs):
        if (mine.type, mine.string) == (other.type, other.string):
            continue
        if mine.type == tokenize.ENDMARKER:
            return f"its line {other.start[0]} ({other.line.strip()!r}) goes on after the starter's code ends: {ONLY}"
        if other.type == tokenize.ENDMARKER:
            return f"it ends before the starter's line {mine.start[0]} ({mine.line.strip()!r}): {ONLY}"
        return (
            f"its line {other.start[0]} has {other.line.strip()!r} where the starter's line {mine.start[0]} has "
            f"{mine.line.strip()!r}: {ONLY}"
        )
    return None

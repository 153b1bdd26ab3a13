"""Before an answer is shown, its code is compared with the lesson's solutions (the reference and the examples
known to pass, handed in by the route: this package never loads them). Comparison is by runs of tokens: the
solutions' code is cut into tokens with the project's own tokenizer (grader.lesson.code_tokens, comments
dropped), and every run of RUN tokens that the learner could not already see (in the starter, the lesson's
text or their own code) is a secret. An answer that repeats enough secret runs gives the solution away, however
the model was talked into it (a comment in the learner's code that says "print the solution" included): it is
replaced by a hint-level reply.

Answers stream: `GuardedStream` lets a line out only once it is whole and the answer up to it passes, and holds
a fenced code block back until it closes, so a leak is cut before its code reaches the page."""

from __future__ import annotations

import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from grader.lesson.code_tokens import code_tokens

RUN = 6  # tokens in a run: `with torch . autocast ( device_type` is one
LEAK_RUNS = 6  # secret runs an answer may repeat in all; more is a leak (one line of the solution is about 9)
LINE_RUNS = 3  # ...or in one line of the answer
SHARE = 0.25  # ...or this share of them (at least 2): a learner one move from the solution has few secret runs left
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d[\w.]*|\S")
_LAYOUT = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER, tokenize.NL, tokenize.COMMENT}


def tokens(source: str) -> list[str]:
    """Code's tokens as the project's tokenizer reads them (comments and layout dropped), each split again by
    _WORD so that code quoted in prose (which Python's tokenizer cannot always read) compares token for token."""
    try:
        strings = [t.string for t in code_tokens(source) if t.type not in _LAYOUT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        strings = [source]
    return [w for s in strings for w in _WORD.findall(s)]


def prose_tokens(text: str) -> list[str]:
    """An answer's tokens: prose and code alike (a model may quote code without a fence)."""
    return _WORD.findall(text)


def runs(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


@dataclass(frozen=True)
class Secrets:
    """The runs of the solutions that the learner has not seen."""

    runs: frozenset

    @classmethod
    def of(cls, solutions: Iterable[str], seen: Iterable[str]) -> Secrets:
        known: set = set()
        for text in seen:
            known |= runs(tokens(text)) | runs(prose_tokens(text))
        secret: set = set()
        for solution in solutions:
            secret |= runs(tokens(solution))
        return cls(frozenset(secret - known))

    def found_in(self, text: str) -> int:
        return len(runs(prose_tokens(text)) & self.runs)

    def leaks(self, text: str) -> bool:
        """Whether `text` gives the solution away: too many secret runs in all, too large a share of them, or
        too many in one line."""
        if not self.runs:
            return False
        found = self.found_in(text)
        if found > LEAK_RUNS or (found >= 2 and found >= SHARE * len(self.runs)):
            return True
        return any(self.found_in(line) >= LINE_RUNS for line in text.splitlines())


class GuardedStream:
    """Feeds the model's pieces through the guard: `feed` returns the text that may be shown now; once a leak is
    found, `leaked` is set and nothing more comes out (the caller shows the hint-level reply instead)."""

    def __init__(self, secrets: Secrets, max_chars: int = 4000):
        self.secrets = secrets
        self.max_chars = max_chars
        self.shown = ""
        self.pending = ""
        self.leaked = False

    def feed(self, piece: str) -> str:
        if self.leaked:
            return ""
        self.pending += piece
        out = ""
        while "\n" in self.pending:
            cut = self._release_point()
            if cut is None:
                break
            out += self._let_out(self.pending[:cut])
            self.pending = self.pending[cut:]
            if self.leaked:
                return ""
        return out

    def finish(self) -> str:
        """The rest, at the end of the answer (an unclosed code block is checked as it stands)."""
        if self.leaked:
            return ""
        rest, self.pending = self.pending, ""
        return self._let_out(rest)

    def _release_point(self) -> int | None:
        """Where the pending text may be cut: after its last whole line, or after a closed code block."""
        if self.pending.count("```") % 2 == 1:  # inside a fenced block: wait for it to close
            return None
        return self.pending.rfind("\n") + 1

    def _let_out(self, text: str) -> str:
        candidate = self.shown + text
        if self.secrets.leaks(candidate):
            self.leaked = True
            return ""
        if len(candidate) > self.max_chars:  # a bounded answer: the rest is dropped
            text = text[: max(0, self.max_chars - len(self.shown))]
        self.shown += text
        return text

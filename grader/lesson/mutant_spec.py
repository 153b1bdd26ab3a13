"""A lesson's own mutants: source edits of its reference that its checks must fail.

The generic mutants (grader/authoring/mutants.py) change what the step receives, so
they never touch a lesson's point (a memory format, a loss divided per micro-batch).
An author writes those as edits of the reference's text: a regular-expression
replacement, or a rewrite of the one statement that starts at a matching line. The
edit is applied here, as text, without running anything: an edit that no longer
applies (the reference changed) is an error of the lesson file, at its line."""

from __future__ import annotations

import ast
import re
import textwrap

from pydantic import Field, field_validator, model_validator

from grader.lesson.base import DeviceKinds, Strict, Text, devices_field, require_english


def _compiles(value: str) -> str:
    try:
        re.compile(value, re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"not a regular expression: {exc}") from None
    return value


class RegexEdit(Strict):
    pattern: str = Field(
        description="a Python regular expression searched in the reference (multi-line mode: ^ and $ match at "
        "each line)"
    )
    replacement: str = Field(description="what each match becomes (\\1 or \\g<name> refer to the pattern's groups)")
    count: int = Field(1, ge=1, description="how many matches the pattern must have; every one is replaced")

    _compiles = field_validator("pattern")(_compiles)


class StatementEdit(Strict):
    at: str = Field(
        description="a regular expression that exactly one line of the reference matches; the statement that "
        "starts on that line (a compound one with its whole block) is rewritten"
    )
    becomes: str = Field(
        "",
        description="the code that replaces the statement, indented like it; empty deletes the statement",
    )

    _compiles = field_validator("at")(_compiles)


class CaughtBy(Strict):
    checks: list[str] = Field(default_factory=list, description="check ids that must fail it")
    findings: list[str] = Field(default_factory=list, description="finding ids its verdict must include")


class LessonMutant(Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    why: Text = Field(description="the mistake it makes, shown when it survives")
    replace: RegexEdit | None = None
    statement: StatementEdit | None = None
    caught_by: CaughtBy = Field(CaughtBy(), description="what must catch it (default: any failure)")
    devices: DeviceKinds = devices_field()

    _en_why = field_validator("why")(require_english)

    @model_validator(mode="after")
    def _one_edit(self):
        if (self.replace is None) == (self.statement is None):
            raise ValueError("a lesson mutant makes one edit: give `replace` or `statement`, not both")
        return self


class MutantSettings(Strict):
    skip: dict[str, str] = Field(
        default_factory=dict,
        description="mutant name -> why it cannot be caught on "
        "this lesson (an equivalent mutant); `grader validate` prints the reason",
    )
    lesson: list[LessonMutant] = Field(
        default_factory=list,
        description="the lesson's own mutants: edits of the reference that must fail (docs/authoring.md, "
        '"Lesson mutants")',
    )

    @model_validator(mode="after")
    def _distinct(self):
        names = [m.name for m in self.lesson]
        if len(set(names)) != len(names):
            raise ValueError("mutants.lesson: each mutant needs its own name")
        return self


def edited(reference: str, mutant: LessonMutant) -> str:
    """The reference with the mutant's edit made. Raises ValueError, saying why, when the edit does not apply."""
    out = _regex(reference, mutant.replace) if mutant.replace else _statement(reference, mutant.statement)
    if out == reference:
        raise ValueError("the edit changes nothing in the reference")
    try:
        ast.parse(out)
    except SyntaxError as exc:
        raise ValueError(f"the edited reference is not valid Python (line {exc.lineno}: {exc.msg})") from None
    return out


def _regex(reference: str, edit: RegexEdit) -> str:
    pattern = re.compile(edit.pattern, re.MULTILINE)
    found = len(pattern.findall(reference))
    if found != edit.count:
        raise ValueError(f"the pattern matches the reference {found} times, not {edit.count} (replace.count)")
    return pattern.sub(edit.replacement, reference)


def _statement(reference: str, edit: StatementEdit) -> str:
    lines = reference.splitlines(keepends=True)
    at = [i + 1 for i, line in enumerate(lines) if re.search(edit.at, line)]
    if len(at) != 1:
        raise ValueError(f"statement.at matches {len(at)} lines of the reference, not 1")
    starting = [n for n in ast.walk(ast.parse(reference)) if isinstance(n, ast.stmt) and n.lineno == at[0]]
    if not starting:
        raise ValueError(f"no statement starts on the line statement.at matches (line {at[0]} of the reference)")
    node = min(starting, key=lambda n: n.col_offset)
    body = textwrap.dedent(edit.becomes).strip("\n") or "pass"
    new = textwrap.indent(body, " " * node.col_offset, lambda _: True) + "\n"
    return "".join(lines[: node.lineno - 1]) + new + "".join(lines[node.end_lineno :])


def edit_problems(reference: str, settings: MutantSettings) -> list[str]:
    """`mutants.lesson[i]: why` for each lesson mutant whose edit does not apply to this reference."""
    out = []
    for i, mutant in enumerate(settings.lesson):
        try:
            edited(reference, mutant)
        except ValueError as exc:
            out.append(f"mutants.lesson[{i}]: {mutant.name}: {exc}")
    return out

"""Finding ids a lesson names in what it expects (an example's `expect.findings` and `expect.absent`, a lesson
mutant's `caught_by.findings`) must be ids some check can give: a typo there would be found only after every
grading (an expected finding never found) or never (an `absent` id that cannot occur always holds). Known ids
are the grader's own (its message catalog, docs/authoring.md's table) and those the lesson's checks return:
the literal first argument of each `finding(...)` in their python, or, where a check builds an id from a
name, every string its python holds."""

from __future__ import annotations

import ast
import difflib

from grader.lesson.loader import LessonFile, Problem
from grader.lesson.positions import yaml_path
from grader.wording.catalog import EN

BUILT_IN = frozenset(key for key in EN if "." not in key and key not in ("layer", "text"))


def review(lesson: LessonFile) -> list[Problem]:
    """A problem, at its line, for each id no check of this lesson can give."""
    known = BUILT_IN | _lesson_ids(lesson.data.get("checks"))
    out = []
    for loc, name in unknown(lesson.data):  # `known` again, for the id each one resembles
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        message = (
            f'{name!r} is no finding id: not one the grader\'s checks give (docs/authoring.md, "Finding ids") '
            f"nor one this lesson's checks return{hint}"
        )
        out.append(Problem(lesson.path, lesson.locator.line(loc), yaml_path(loc), message))
    return out


def unknown(data) -> list[tuple[tuple, str]]:
    """(YAML path, id) of each finding id the lesson's data name that no check of it can give."""
    known = BUILT_IN | _lesson_ids(data.get("checks") if isinstance(data, dict) else None)
    return [(loc, name) for loc, name in _named(data) if name not in known]


def _named(data) -> list[tuple[tuple, str]]:
    """(YAML path, id) of every finding id the lesson expects or rules out."""
    out = []
    examples = data.get("examples") if isinstance(data, dict) else None
    for i, example in enumerate(examples if isinstance(examples, list) else []):
        expect = example.get("expect") if isinstance(example, dict) else None
        for field in ("findings", "absent"):
            ids = expect.get(field) if isinstance(expect, dict) else None
            out += [(("examples", i, "expect", field, j), v) for j, v in enumerate(_strings(ids))]
    settings = data.get("mutants") if isinstance(data, dict) else None
    lesson_mutants = settings.get("lesson") if isinstance(settings, dict) else None
    for i, mutant in enumerate(lesson_mutants if isinstance(lesson_mutants, list) else []):
        caught = mutant.get("caught_by") if isinstance(mutant, dict) else None
        ids = caught.get("findings") if isinstance(caught, dict) else None
        out += [(("mutants", "lesson", i, "caught_by", "findings", j), v) for j, v in enumerate(_strings(ids))]
    return out


def _strings(values) -> list[str]:
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def _lesson_ids(checks) -> frozenset[str]:
    ids: set[str] = set()
    for spec in checks if isinstance(checks, list) else []:
        source = spec.get("python") if isinstance(spec, dict) else None
        if not isinstance(source, str):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # reported as the check's own problem
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "finding"]
        literal = [c.args[0].value for c in calls if c.args and _is_str(c.args[0])]
        literal += [k.value.value for c in calls for k in c.keywords if k.arg == "id" and _is_str(k.value)]
        ids.update(literal)
        if len(literal) < len(calls):  # an id made from a name: any string of the check may be one
            ids.update(n.value for n in ast.walk(tree) if _is_str(n))
    return frozenset(ids)


def _is_str(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)

"""Reads lesson YAML files. The point of this module is the error messages: an
instructor sees `file:line: field: what was expected`, because pydantic's error
locations are mapped back onto the YAML nodes they came from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from grader.errors import ExerciseError, ExerciseNotFound
from grader.schema import Exercise

EXERCISES_ENV = "AMP_DOJO_EXERCISES"


def default_exercise_dir() -> Path:
    if os.environ.get(EXERCISES_ENV):
        return Path(os.environ[EXERCISES_ENV])
    return Path(__file__).resolve().parent.parent / "exercises"


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


def _node_at(node: yaml.Node, loc: tuple) -> yaml.Node:
    """The deepest YAML node along a pydantic error location."""
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
            if match is None:
                # an unexpected key: point at the key itself
                match = next((k for k, _ in node.value if k.value == key), None)
            if match is None:
                return node
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            # pydantic adds union-branch names ("str", "dict[...]"): stay where we are
            continue
    return node


def _describe(err: dict) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown field (check its spelling; see docs/authoring.md)"
    if kind == "missing":
        return "required field is missing"
    if kind == "union_tag_invalid":
        return f"unknown check id; expected one of {err['ctx']['expected_tags']}"
    return err["msg"] + (f" (got {err['input']!r})" if kind.endswith("_type") or kind.startswith("literal") else "")


def _field_name(loc: tuple) -> str:
    parts = []
    for key in loc:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key in ("str", "function-after[_require_english(), dict[Literal['en', 'it', 'id'], str]]"):
            continue
        elif "[" in str(key) and "]" in str(key) or str(key).startswith("function-"):
            continue
        else:
            parts.append(("." if parts else "") + str(key))
    return "".join(parts)


def parse_exercise(path: Path) -> tuple[Exercise | None, list[Problem]]:
    """Returns the exercise or every problem found in it (never raises for bad input)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, [Problem(path, None, "", f"cannot read: {exc.strerror}")]
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        return None, [Problem(path, line, "", f"not valid YAML: {getattr(exc, 'problem', exc)}")]
    if not isinstance(data, dict):
        return None, [Problem(path, 1, "", "an exercise file must be a mapping of fields (see docs/authoring.md)")]
    try:
        exercise = Exercise.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            node = _node_at(root, err["loc"])
            problems.append(Problem(path, node.start_mark.line + 1, _field_name(err["loc"]), _describe(err)))
        return None, _dedupe(problems)
    expected_id = path.stem if path.name != "exercise.yaml" else path.parent.name
    if exercise.id != expected_id:
        line = _node_at(root, ("id",)).start_mark.line + 1
        return None, [Problem(path, line, "id", f"must match the file name: expected {expected_id!r}")]
    return exercise, []


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in problems:
        key = (p.line, p.field)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def exercise_files(directory: Path | None = None) -> list[Path]:
    directory = directory or default_exercise_dir()
    files = sorted(directory.glob("*.yaml")) + sorted(directory.glob("*/exercise.yaml"))
    return files


def load_exercise_file(path: Path) -> Exercise:
    exercise, problems = parse_exercise(path)
    if problems:
        raise ExerciseError("\n".join(str(p) for p in problems))
    return exercise


def load_all(directory: Path | None = None) -> dict[str, Exercise]:
    exercises = [load_exercise_file(p) for p in exercise_files(directory)]
    return {e.id: e for e in sorted(exercises, key=lambda e: (e.order, e.id))}


def load_exercise(exercise_id: str, directory: Path | None = None) -> Exercise:
    directory = directory or default_exercise_dir()
    for candidate in (directory / f"{exercise_id}.yaml", directory / exercise_id / "exercise.yaml"):
        if candidate.exists():
            return load_exercise_file(candidate)
    known = ", ".join(p.stem if p.name != "exercise.yaml" else p.parent.name for p in exercise_files(directory))
    raise ExerciseNotFound(f"no exercise {exercise_id!r}; known: {known or 'none'}")

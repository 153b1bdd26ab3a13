"""Reads lesson YAML files. The point of this module is the error messages: an
instructor sees `file:line: field: what was expected`, because pydantic's error
locations are mapped back onto the YAML nodes they came from."""

from __future__ import annotations

import os
import re
import typing
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from grader.errors import ExerciseError, ExerciseNotFound
from grader.lesson.check_specs import BUILT_IN_CHECKS
from grader.lesson.schema import Exercise
from grader.lesson.workload_spec import MODEL_KINDS, CnnSpec, MlpSpec, TransformerSpec

# Names pydantic puts in an error location for the branch of a tagged union: not fields of the YAML.
UNION_TAGS = {*MODEL_KINDS, *BUILT_IN_CHECKS, "lesson"}

EXERCISES_ENV = "AMP_DOJO_EXERCISES"
BUILT_IN = Path(__file__).resolve().parents[2] / "exercises"


def exercise_dirs() -> list[Path]:
    """The built-in lessons, then every folder named in AMP_DOJO_EXERCISES (separated by ':'), which *adds*
    lessons. A named folder that does not exist is an error: an empty course from a typo helps nobody."""
    extra = [Path(p) for p in os.environ.get(EXERCISES_ENV, "").split(os.pathsep) if p]
    for folder in extra:
        if not folder.is_dir():
            raise ExerciseError(f"{EXERCISES_ENV} names {str(folder)!r}, which is not a folder")
    return [BUILT_IN, *[f for f in extra if f.resolve() != BUILT_IN]]


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
        if isinstance(node, yaml.MappingNode) and key in UNION_TAGS and not any(k.value == key for k, _ in node.value):
            continue
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
        allowed = allowed_fields(err["loc"])
        where = f"; the fields here are: {', '.join(allowed)}" if allowed else ""
        where += _other_model_kind(err["loc"])
        return f"unknown field {err['loc'][-1]!r} (check its spelling; see docs/authoring.md){where}"
    if kind == "missing":
        return "required field is missing"
    if kind == "union_tag_invalid" and err["loc"] and err["loc"][-1] == "model":
        return (
            f"unknown model kind {err['ctx'].get('tag')!r}; the built-in models are {', '.join(MODEL_KINDS)} "
            "(or leave out model, optimizer and data and write workload.setup)"
        )
    if kind == "union_tag_invalid":
        return f"unknown value {err['ctx'].get('tag')!r}; expected one of {err['ctx']['expected_tags']}"
    if kind == "unknown_check":
        return err["msg"]
    return err["msg"] + (f" (got {err['input']!r})" if kind.endswith("_type") or kind.startswith("literal") else "")


def _other_model_kind(loc: tuple) -> str:
    """'in_channels' on an mlp is a field of the cnn model: say so."""
    if "model" not in loc[:-1]:
        return ""
    kinds = [
        m.model_fields["kind"].annotation.__args__[0]
        for m in (MlpSpec, CnnSpec, TransformerSpec)
        if loc[-1] in m.model_fields
    ]
    return f" ({loc[-1]!r} is a field of model kind {' or '.join(kinds)})" if kinds else ""


def _models_in(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def allowed_fields(loc: tuple) -> list[str]:
    """The fields the lesson format supports where an unknown one was found, so the message teaches the
    format: walks the schema along the error's location (list indexes skipped, check ids pick the check)."""
    current: list[type[BaseModel]] = [Exercise]
    for key in loc[:-1]:
        if isinstance(key, int):
            continue
        inner = [
            m for model in current if key in model.model_fields for m in _models_in(model.model_fields[key].annotation)
        ]
        tagged = [
            m
            for m in current
            for tag in ("id", "kind")
            if tag in m.model_fields and key in typing.get_args(m.model_fields[tag].annotation)
        ]
        tagged += [m for m in current if key == "lesson" and m.__name__ == "LessonCheck"]
        current = inner or tagged
        if not current:
            return []
    return list(current[0].model_fields) if len(current) == 1 else []


def _field_name(loc: tuple) -> str:
    parts = []
    for i, key in enumerate(loc):
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key in ("str", "function-after[_require_english(), dict[Literal['en', 'it', 'id'], str]]") or (
            key in UNION_TAGS and i and (loc[i - 1] == "model" or isinstance(loc[i - 1], int))
        ):
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
            err = _located(err)
            node = _node_at(root, err["loc"])
            problems.append(Problem(path, node.start_mark.line + 1, _field_name(err["loc"]), _describe(err)))
        return None, _dedupe(problems)
    expected_id = path.stem if path.name != "exercise.yaml" else path.parent.name
    if exercise.id != expected_id:
        line = _node_at(root, ("id",)).start_mark.line + 1
        return None, [Problem(path, line, "id", f"must match the file name: expected {expected_id!r}")]
    return exercise, []


def block_line(path: Path, loc: tuple, line_in_block: int | None) -> int | None:
    """The file line of line `line_in_block` (1-based) of a `|` block such as workload.setup, so an error in a
    lesson's Python names the line an instructor can jump to."""
    try:
        node = _node_at(yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader), loc)
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(node, yaml.ScalarNode):
        return None
    first = node.start_mark.line + (2 if node.style in ("|", ">") else 1)
    return first + (line_in_block or 1) - 1


def _located(err: dict) -> dict:
    """A whole-lesson rule names the field it is about ("entrypoint.params[2]: ..."): point there."""
    match = re.match(r"^Value error, ([a-z_][\w.]*(?:\[\d+\])*): (.*)$", err["msg"], re.S)
    if err["loc"] or not match:
        return err
    loc = tuple(int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", match.group(1)))
    return {**err, "loc": loc, "msg": match.group(2), "type": "value_error"}


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in problems:
        key = (p.line, p.field)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def exercise_files(directory: Path | None = None) -> list[Path]:
    """Lesson files of one folder, or of all the lesson folders (exercise_dirs) when none is given."""
    if directory is None:
        return [f for folder in exercise_dirs() for f in exercise_files(folder)]
    if not directory.is_dir():
        raise ExerciseError(f"the lesson folder {str(directory)!r} does not exist")
    return sorted(directory.glob("*.yaml")) + sorted(directory.glob("*/exercise.yaml"))


def load_exercise_file(path: Path) -> Exercise:
    exercise, problems = parse_exercise(path)
    if problems:
        raise ExerciseError("\n".join(str(p) for p in problems))
    return exercise


def load_all(directory: Path | None = None, problems: list[Problem] | None = None) -> dict[str, Exercise]:
    """Every valid lesson. A broken file is skipped, never fatal: its problems go to `problems` (file:line),
    so one bad draft cannot take down the lesson list. The first of two lessons with one id wins."""
    exercises: dict[str, Exercise] = {}
    for path in exercise_files(directory):
        exercise, found = parse_exercise(path)
        if exercise is not None and exercise.id in exercises:
            found = [Problem(path, None, "id", f"another lesson folder already has a lesson {exercise.id!r}")]
        if found:
            if problems is not None:
                problems.extend(found)
            continue
        exercises[exercise.id] = exercise
    return dict(sorted(exercises.items(), key=lambda item: (item[1].order, item[0])))


def load_exercise(exercise_id: str, directory: Path | None = None) -> Exercise:
    for folder in [directory] if directory else exercise_dirs():
        for candidate in (folder / f"{exercise_id}.yaml", folder / exercise_id / "exercise.yaml"):
            if candidate.exists():
                return load_exercise_file(candidate)
    known = ", ".join(p.stem if p.name != "exercise.yaml" else p.parent.name for p in exercise_files(directory))
    raise ExerciseNotFound(f"no exercise {exercise_id!r}; known: {known or 'none'}")

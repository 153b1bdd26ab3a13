"""Reads lesson YAML files. The point of this module is the error messages: an
instructor sees `file:line: field: what was expected`, because pydantic's error
locations are mapped back onto the YAML nodes they came from."""

from __future__ import annotations

import copy
import difflib
import os
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from grader.errors import ExerciseError, ExerciseNotFound
from grader.lesson.positions import UNION_TAGS, Locator, line_named, node_at
from grader.lesson.schema import Exercise
from grader.lesson.workload_spec import MODEL_KINDS, CnnSpec, MlpSpec, TransformerSpec

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

    severity: str = "error"  # or "warning": printed, never a reason to refuse the lesson

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        field = f" {self.field}:" if self.field else ""
        warning = " warning:" if self.severity == "warning" else ""
        return f"{where}:{warning}{field} {self.message}"


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


@dataclass
class LessonFile:
    """A lesson file as read: its data, where each part of it is, every problem of its format, the exercise
    once nothing is wrong, and meanwhile `partial`: the exercise made of the fields that are valid, so that the
    checks that need only those (its lesson code, its cross-field rules) report in the same pass."""

    path: Path
    data: dict | None = None
    locator: Locator = field(default_factory=lambda: Locator(None))
    exercise: Exercise | None = None
    partial: Exercise | None = None
    problems: list[Problem] = field(default_factory=list)


# libyaml's safe loader where PyYAML was built with it: the same documents, nodes and marks, about ten times faster
# than the pure-Python one (which took 0.6 s of a `grader check` that reports a syntax error in 1 s)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_lesson(path: Path) -> LessonFile:
    """Every problem of a lesson file's format at once (never raises for bad input)."""
    lesson = LessonFile(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        lesson.problems.append(Problem(path, None, "", f"cannot read: {exc.strerror}"))
        return lesson
    try:
        root = yaml.compose(text, Loader=SAFE_LOADER)
        data = yaml.load(text, Loader=SAFE_LOADER)  # the safe loader, in C where PyYAML has it
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        lesson.problems.append(Problem(path, line, "", f"not valid YAML: {getattr(exc, 'problem', exc)}"))
        return lesson
    if not isinstance(data, dict):
        lesson.problems.append(
            Problem(path, 1, "", "an exercise file must be a mapping of fields (see docs/authoring.md)")
        )
        return lesson
    lesson.data, lesson.locator = data, Locator(root)
    try:
        exercise, errors = Exercise.model_validate(data), []
    except ValidationError as exc:
        exercise, errors = None, exc.errors()
    fields = _one_per_mistake([e for e in errors if e["loc"]])
    lesson.partial = exercise or _partial(data, {e["loc"][0] for e in fields})
    rules = _rule_errors(lesson.partial) if exercise is None else []
    if not rules:  # a whole-lesson error that is no rule of ours: pydantic's own
        rules = [e for e in errors if not e["loc"]]
    lesson.problems = _dedupe([_problem(lesson, e) for e in fields + rules] + _id_problems(lesson))
    lesson.exercise = exercise if not lesson.problems else None
    return lesson


def parse_exercise(path: Path) -> tuple[Exercise | None, list[Problem]]:
    """Returns the exercise or every problem found in it (never raises for bad input)."""
    lesson = read_lesson(path)
    return lesson.exercise, lesson.problems


def _problem(lesson: LessonFile, err: dict) -> Problem:
    """At the line of the field, or of the line inside its `|` block that the message names."""
    err = _located(err)
    message = _describe(err)
    node = node_at(lesson.locator.root, err["loc"])
    inside = line_named(message) if isinstance(node, yaml.ScalarNode) and node.style == "|" else None
    line = lesson.locator.block_line(err["loc"], inside) if inside else lesson.locator.line(err["loc"])
    return Problem(lesson.path, line, _field_name(err["loc"]), message)


def _one_per_mistake(errors: list[dict]) -> list[dict]:
    """A text given as a map with a wrong language fails both branches of `str | dict`: only the map's error
    says what is wrong, so "should be a valid string" is left out where the map's branch has its own."""
    return [
        e
        for e in errors
        if e["loc"][-1] != "str"
        or not any(len(o["loc"]) > len(e["loc"]) and o["loc"][: len(e["loc"]) - 1] == e["loc"][:-1] for o in errors)
    ]


def _partial(data: dict, wrong: set) -> Exercise:
    """The exercise built from its valid fields only (the others left unset). A field whose only fault is a
    misspelt name inside it (`workload.amp.growth_intervall`) is kept without that name, so that what depends on
    it (its setup code, the rules across fields, the warnings) is still checked in the same pass."""
    fields = {}
    for name, info in Exercise.model_fields.items():
        if name not in data:
            if not info.is_required():
                fields[name] = info.get_default(call_default_factory=True)
            continue
        value = _without_unknown_fields(info.annotation, data[name])
        if value is not None:
            fields[name] = value
    return Exercise.model_construct(**fields)


def _without_unknown_fields(annotation, value, tries: int = 20):
    """`value` validated, after dropping the fields its model does not know, one error at a time; None where
    any other error remains (a wrong value is never replaced by a default that could mislead a rule)."""
    value = copy.deepcopy(value)
    for _ in range(tries):
        try:
            return TypeAdapter(annotation).validate_python(value)
        except ValidationError as exc:
            unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if len(unknown) != len(exc.errors()) or not all(_drop(value, loc) for loc in unknown):
                return None
    return None


def _drop(value, loc: tuple) -> bool:
    """Deletes the key at `loc` (whose parts may include a union's tag, which is no key of the data)."""
    parts = [p for p in loc[:-1]]
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
    if isinstance(value, dict) and loc and loc[-1] in value:
        del value[loc[-1]]
        return True
    return False


def _rule_errors(partial: Exercise) -> list[dict]:
    """Every rule across fields (Exercise's model validators), each run on its own: pydantic runs them only once
    every field is valid, and stops at the first that fails. A rule that needs a field which is itself wrong
    (reported already) is left out."""
    out = []
    for decorator in Exercise.__pydantic_decorators__.model_validators.values():
        if decorator.info.mode != "after":
            continue
        try:
            decorator.func(partial)
        except ValueError as exc:
            out.append({"type": "value_error", "loc": (), "msg": f"Value error, {exc}", "input": None})
        except Exception:  # noqa: BLE001 - an unset (wrong) field
            continue
    return out


def _id_problems(lesson: LessonFile) -> list[Problem]:
    path = lesson.path
    expected_id = path.stem if path.name != "exercise.yaml" else path.parent.name
    got = lesson.data.get("id")
    if not isinstance(got, str) or got == expected_id:
        return []
    return [Problem(path, lesson.locator.line(("id",)), "id", f"must match the file name: expected {expected_id!r}")]


def _located(err: dict) -> dict:
    """A rule names the field it is about ("entrypoint.params[2]: ...", or in a quiz question "answer: ..."):
    point there, below the place pydantic reports the rule at."""
    match = re.match(r"^Value error, ([a-z_]\w*(?:\[\d+\]|\.[a-z_]\w*)*): (.*)$", err["msg"], re.S)
    if not match:
        return err
    loc = tuple(int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", match.group(1)))
    if err["loc"] and loc[0] == err["loc"][-1]:  # "prepare.returns: ..." said by prepare itself
        loc = loc[1:]
    return {**err, "loc": (*err["loc"], *loc), "msg": match.group(2), "type": "value_error"}


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


def exercise_file(exercise_id: str, directory: Path | None = None) -> Path | None:
    """The file a lesson id names (its content hash goes with every web result: webapp/regrades.py)."""
    for folder in [directory] if directory else exercise_dirs():
        for candidate in (folder / f"{exercise_id}.yaml", folder / exercise_id / "exercise.yaml"):
            if candidate.exists():
                return candidate
    return None


def load_exercise(exercise_id: str, directory: Path | None = None) -> Exercise:
    path = exercise_file(exercise_id, directory)
    if path is not None:
        return load_exercise_file(path)
    ids = [p.stem if p.name != "exercise.yaml" else p.parent.name for p in exercise_files(directory)]
    known = ", ".join(ids) or "none"
    near = difflib.get_close_matches(exercise_id, ids, n=1, cutoff=0.6)
    if near:
        raise ExerciseNotFound.worded("cli.no_exercise_near", id=exercise_id, near=near[0], known=known)
    raise ExerciseNotFound.worded("cli.no_exercise", id=exercise_id, known=known)

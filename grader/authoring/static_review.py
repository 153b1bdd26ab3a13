"""What `grader validate` finds in a lesson file without grading it, in the same pass as the format's problems
and whatever else is wrong: texts that still say TODO, lesson code (workload.setup, lesson checks, the
reference, baseline, starter and examples) that does not load, entrypoint parameters the setup does not provide;
and the warnings, which are printed but refuse nothing: a float16 run without a float16 tolerance, a
mutants.skip name that is no mutant, a batch() that draws from a global random generator. Each at the file
line of the exact place, inside `|` blocks too. Works on the valid part of a lesson that has problems."""

from __future__ import annotations

import ast
from types import SimpleNamespace

from pydantic import TypeAdapter, ValidationError

from grader.authoring import finding_ids, mutants
from grader.authoring.seeding import global_generators_drawn
from grader.checks import lesson as lesson_checks
from grader.errors import ExerciseError
from grader.lesson.check_specs import CheckSpec
from grader.lesson.loader import LessonFile, Problem
from grader.lesson.positions import todo_places, yaml_path
from grader.worker import workload

DEVICE_KINDS = ("cpu", "cuda", "cpu_amx")
CHECK = TypeAdapter(CheckSpec)


def review(lesson: LessonFile) -> tuple[list[Problem], list[Problem]]:
    """(problems, warnings) of a lesson that parsed as YAML."""
    problems = _todos(lesson) + _code(lesson) + _setups(lesson) + _lesson_checks(lesson) + finding_ids.review(lesson)
    warnings = _tolerances(lesson) + _mutant_names(lesson) + _unseeded_batches(lesson)
    return problems, warnings


def _at(lesson: LessonFile, loc: tuple, message: str, line_in_block: int | None = None, severity="error") -> Problem:
    line = lesson.locator.block_line(loc, line_in_block) if line_in_block else lesson.locator.line(loc)
    return Problem(lesson.path, line, yaml_path(loc), message, severity)


def _part(lesson: LessonFile, name: str):
    """A valid top-level field of the lesson, or None (missing or wrong: reported by the format)."""
    return getattr(lesson.partial, name, None) if lesson.partial is not None else None


def _todos(lesson: LessonFile) -> list[Problem]:
    return [Problem(lesson.path, line, yaml_path(loc), "still says TODO") for loc, line in todo_places(lesson.locator)]


def _code(lesson: LessonFile) -> list[Problem]:
    """The Python the grader runs as it is written: each must parse and define the entrypoint."""
    data, out = lesson.data, []
    ep = _part(lesson, "entrypoint")
    places = [((role,), data.get(role)) for role in ("reference", "baseline", "starter")]
    places += [
        (("examples", i, "code"), e.get("code"))
        for i, e in enumerate(data.get("examples") or [])
        if isinstance(e, dict)
    ]
    for loc, source in places:
        if not isinstance(source, str):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            out.append(_at(lesson, loc, f"is not Python: {exc.msg} (its line {exc.lineno})", exc.lineno))
            continue
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if ep is not None and ep.name not in defined:
            out.append(_at(lesson, loc, f"defines no `def {ep.name}(...)`, the entrypoint the grader calls"))
    return out


def _setup_places(lesson: LessonFile) -> list[tuple[str, tuple, object]]:
    """(device kind, YAML path of its setup, the workload graded there) for each setup of the lesson."""
    wl = _part(lesson, "workload")
    if wl is None:
        return []
    out = []
    for kind in DEVICE_KINDS:
        override = getattr(wl, kind, None)
        if kind != "cpu" and (override is None or override.setup is None):
            continue
        graded = wl.for_device(kind)
        if graded.setup is not None:
            where = ("workload", kind, "setup") if kind != "cpu" else ("workload", "setup")
            out.append((kind, where, graded))
    return out


def _setups(lesson: LessonFile) -> list[Problem]:
    """Each setup is run as a grading would build it; the entrypoint must take only what it provides."""
    out = []
    setup = (lesson.data.get("workload") or {}).get("setup") if isinstance(lesson.data.get("workload"), dict) else None
    if _part(lesson, "workload") is None and isinstance(setup, str):  # the rest of the workload is wrong
        try:
            workload.load_setup(setup)
        except workload.SetupError as exc:
            out.append(_at(lesson, ("workload", "setup"), exc.message, exc.line))
    for _kind, where, graded in _setup_places(lesson):
        try:
            problem = workload.build_problem(graded.model_dump())
        except workload.SetupError as exc:
            out.append(_at(lesson, where, exc.message, exc.line))
            continue
        out += _unprovided(lesson, problem)
    return list({str(p): p for p in out}.values())  # one setup graded on two device kinds: said once


def _unprovided(lesson: LessonFile, problem) -> list[Problem]:
    ep = _part(lesson, "entrypoint")
    if ep is None:
        return []
    names = problem.names()
    returned = set(ep.provided_by_prepare())
    out = [
        _at(
            lesson,
            ("entrypoint", "params", i),
            f"{p!r} is not provided by workload.setup (it provides {', '.join(sorted(names))})",
        )
        for i, p in enumerate(ep.params)
        if p not in names and p not in returned
    ]
    once = {*problem.models, *problem.optimizers, *problem.constants, *workload.GRADER_PARAMS}
    out += [
        _at(
            lesson,
            ("entrypoint", "prepare", "params", i),
            f"{p!r} is not something prepare can take (it runs "
            f"once, before any step's data; it can take {', '.join(sorted(once))})",
        )
        for i, p in enumerate(ep.prepare.params if ep.prepare else [])
        if p not in once
    ]
    return out


def _lesson_checks(lesson: LessonFile) -> list[Problem]:
    """A lesson check's python is loaded here, even where another field of that check is wrong."""
    out = []
    for i, spec in enumerate(lesson.data.get("checks") or []):
        if not (isinstance(spec, dict) and isinstance(spec.get("python"), str) and isinstance(spec.get("id"), str)):
            continue
        try:
            lesson_checks.compile_check(SimpleNamespace(id=spec["id"], python=spec["python"]))
        except ExerciseError as exc:
            out.append(_at(lesson, ("checks", i, "python"), exc.message, getattr(exc, "line", None)))
    return out


# -- warnings --------------------------------------------------------------------------------------------------


def _valid_checks(lesson: LessonFile) -> list[tuple[int, object]]:
    """(index, spec) of each entry of `checks` that is valid by itself, whatever is wrong with the others."""
    out = []
    for i, raw in enumerate(lesson.data.get("checks") or [] if isinstance(lesson.data.get("checks"), list) else []):
        try:
            out.append((i, CHECK.validate_python(raw)))
        except ValidationError:
            continue
    return out


def _tolerances(lesson: LessonFile) -> list[Problem]:
    """parity looks its tolerance up by the dtype the run autocasts to: a float16 run on CUDA (the default
    cuda_dtype) with only a bfloat16 tolerance errors there, though every CPU grading passes."""
    wl = _part(lesson, "workload")
    if wl is None:
        return []
    out = []
    for i, spec in _valid_checks(lesson):
        if spec.id != "parity":
            continue
        for device, dtype in (("CUDA", wl.amp.cuda_dtype), ("the CPU", wl.amp.cpu_dtype)):
            if dtype not in spec.tolerances:
                field = "cuda_dtype" if device == "CUDA" else "cpu_dtype"
                out.append(
                    _at(
                        lesson,
                        ("checks", i, "tolerances"),
                        f"the lesson is graded in {dtype} on {device} (workload.amp.{field}) but parity has no "
                        f"{dtype} tolerance, so parity errors there; add tolerances.{dtype} (measure it with "
                        f"`grader validate --device {'cuda' if device == 'CUDA' else 'cpu'}`)",
                        severity="warning",
                    )
                )
    return out


def _mutant_names(lesson: LessonFile) -> list[Problem]:
    settings = _part(lesson, "mutants")
    if settings is None or not settings.skip:
        return []
    known = sorted({m.name for m in mutants.MUTANTS})
    mine = sorted(m.name for m in mutants.applicable(lesson.exercise)) if lesson.exercise is not None else None
    out = []
    for name in settings.skip:
        if name.split("[")[0] in known and (mine is None or name in mine):
            continue
        listed = f"this lesson's mutants are {', '.join(mine)}" if mine else f"the mutants are {', '.join(known)}"
        out.append(
            _at(
                lesson,
                ("mutants", "skip", name),
                f"{name!r} is not a mutant of this lesson, so skipping it does nothing ({listed})",
                severity="warning",
            )
        )
    return out


def _unseeded_batches(lesson: LessonFile) -> list[Problem]:
    out = []
    for _kind, where, graded in _setup_places(lesson):
        try:
            namespace = workload.load_setup(graded.setup)
        except workload.SetupError:
            continue  # reported with the problems
        drawn = global_generators_drawn(namespace["batch"], graded.seed)
        if not drawn:
            continue
        line = next(
            (n.lineno for n in ast.parse(graded.setup).body if isinstance(n, ast.FunctionDef) and n.name == "batch"),
            None,
        )
        out.append(
            _at(
                lesson,
                where,
                f"batch(step, seed) draws from the global random generator of {' and '.join(drawn)}: its data "
                "then depend on what ran before it in that process, not on (step, seed) alone, so the FP32 "
                "baseline's batches may differ from the submission's; draw from a generator of its own "
                "(torch.Generator().manual_seed(seed * 1_000_003 + step))",
                line,
                severity="warning",
            )
        )
    return list({str(p): p for p in out}.values())

"""Starting a worker for a lesson and waiting until it has loaded its code (and
run the learner's prepare); and the lesson's starting point, which the judge
builds itself from the workload so that every run's parameters can be checked
against what they started from."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from grader.errors import EnvironmentProblem, ExerciseError
from grader.judge.devices import device_model, workload_kind
from grader.judge.protocol import StepFailure, _traces, code_of, malformed_is_protocol, prepare_trace, rank_replies
from grader.lesson.schema import Exercise
from grader.sandboxes import compile_cache
from grader.sandboxes.limits import WorkerSpec
from grader.sandboxes.process import SandboxDidNotStart, WorkerProcess, params_reply_limit
from grader.wording import layers
from grader.worker import workload

_START_CACHE: dict[str, Start] = {}


def spawn_worker(
    launcher, exercise: Exercise, code: str, filename: str, device: str, trace: bool, ranks: int | None = None
) -> WorkerProcess:
    """Starts the process (it imports torch while the grader does other work); `init_worker` waits for it."""
    ranks = ranks or exercise.workload.ranks
    public = exercise.public(workload_kind(exercise, device))
    try:
        cache = str(compile_cache_of(exercise, device, launcher))
        compiler = loads_compiler_first(launcher, exercise, code)
        worker = launcher.start(
            WorkerSpec(code, filename, public, device, trace=trace, ranks=ranks, compile_cache=cache, compiler=compiler)
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnvironmentProblem(f"the {launcher.name} sandbox could not start a worker: {exc}") from None
    worker.ranks = ranks
    worker.limits = lesson_limits(worker.limits, exercise)
    worker.params_limit = params_reply_limit(starting_point(exercise, device).state, ranks)
    return worker


def loads_compiler_first(launcher, exercise: Exercise, code: str) -> bool:
    """A learner's worker for a lesson that compiles loads the compiler before its code arrives (WorkerSpec.compiler):
    seconds off its first step. A trusted run being computed (Launcher.trusted) does not: what it measures bounds a
    learner's whole grading (grader/judge/budget.py, 8x the reference's time), and a learner's worker that did not
    load it first (a cold start, a forked one, code that compiles where the reference does not) must still fit."""
    return exercise.compiles and code != exercise.baseline and not launcher.writes_compile_cache


def compile_cache_of(exercise: Exercise, device: str, launcher) -> Path:
    """The lesson's trusted compile cache (grader/sandboxes/compile_cache.py): one per lesson, device and the
    PyTorch the sandbox runs, so that a kernel never meets another compiler's. bwrap and local workers run this
    interpreter's PyTorch and share one; a Docker image's is its own (the launcher's identity)."""
    import hashlib

    import torch

    runtime = launcher.identity() if launcher.name == "docker" else "this interpreter"
    where = json.dumps([device_model(device), torch.__version__, runtime])
    return compile_cache.default_root() / exercise.id / hashlib.sha256(where.encode()).hexdigest()[:16]


def lesson_limits(limits, exercise: Exercise):
    """The sandbox's limits with the lesson's own step timeout, within what the admin allows lessons."""
    wanted = exercise.workload.step_timeout_s
    if wanted is None or wanted <= limits.step_timeout_s:
        return limits
    return replace(limits, step_timeout_s=min(wanted, max(limits.lesson_step_timeout_max_s, limits.step_timeout_s)))


def init_worker(launcher, worker: WorkerProcess) -> WorkerProcess:
    """Waits for the worker to load the code (and run the learner's prepare); what prepare did is kept as
    `worker.prepare_traces`, one per rank."""
    try:
        worker.wait_ready()
    except SandboxDidNotStart as exc:
        worker.close()
        raise EnvironmentProblem(f"the {launcher.name} sandbox did not start a worker: {exc}") from None
    try:
        replies = rank_replies(worker, worker.request(worker.init_message(), timeout=launcher.limits.init_timeout_s))
        with malformed_is_protocol():
            worker.prepare_traces = [
                prepare_trace(_traces([r["trace"]], code_of(worker))[0], i if len(replies) > 1 else None)
                for i, r in enumerate(replies)
                if "trace" in r
            ]
    except StepFailure as exc:
        worker.close()  # first: what it printed is all read only once its pipe is closed
        exc.payload["output"] = worker.output()  # what the code printed before failing belongs in the result
        raise
    except BaseException:
        worker.close()
        raise
    return worker


def lesson_setup_error(exercise: Exercise, message: str) -> ExerciseError:
    return ExerciseError(
        f"lesson {exercise.id!r}: {message} (this is the lesson's fault, not the submission's; "
        "run `grader validate` on it)"
    )


@dataclass
class Start:
    """Where every run starts, rebuilt here from the seed: the weights, and the model's layers by name."""

    state: dict
    layers: dict
    # the tensors no optimizer trains, by name: buffers (BatchNorm's running statistics, which a skipped step's
    # forward moves) and parameters no optimizer of the lesson's setup holds (an EMA copy of the weights)
    untrained: frozenset = frozenset()


def starting_point(exercise: Exercise, device: str) -> Start:
    """Built in the grading process; a lesson whose setup code fails stops the grading as the lesson's error
    before any learner code runs."""
    wl = workload_of(exercise, device)
    key = wl.model_dump_json()
    if key not in _START_CACHE:
        try:
            problem = workload.build_problem(wl.model_dump(), optimizers=False)
        except workload.SetupError as exc:
            raise lesson_setup_error(exercise, exc.message) from None
        if unprovided := problem.unprovided_by(exercise.entrypoint.model_dump()):
            raise lesson_setup_error(exercise, unprovided)
        _START_CACHE[key] = Start(problem.state(), layers.describe(problem.root), untrained(problem))
    return _START_CACHE[key]


def untrained(problem: workload.Problem) -> frozenset:
    """What no optimizer can change, so that only the learner's other code moves it: buffers, and parameters
    that none of the setup's optimizers holds. Where the setup builds no optimizer (the learner's prepare does,
    after wrapping or sharding) or a shorthand one not built here, every parameter counts as trained."""
    buffers = {name for name, _ in problem.root.named_buffers()}
    held = problem.optimized()
    if held is None:
        return frozenset(buffers)
    return frozenset(buffers | {name for name, p in problem.root.named_parameters() if id(p) not in held})


def workload_of(exercise: Exercise, device: str):
    return exercise.workload.for_device(workload_kind(exercise, device))

"""What a sandbox is given: the limits on one grading's processes, and the spec of the code a worker runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 6 * 1024**3  # address space of a CPU worker
    output_bytes: int = 256 * 1024  # learner output kept for display
    file_bytes: int = 64 * 1024**2  # largest file the worker may write
    init_timeout_s: float = 120.0  # importing torch and the code, building the model
    step_timeout_s: float = 60.0  # one request of training steps
    # the most a lesson may raise step_timeout_s to for its own gradings (workload.step_timeout_s: a first step that
    # compiles, say); the admin's bound on what a lesson file can ask for
    lesson_step_timeout_max_s: float = 300.0
    processes: int = 256  # processes and threads in a sandbox (fork bombs)
    tmp_bytes: int = 256 * 1024**2  # all the sandbox may write: its /tmp and /dev/shm together
    cpus: float = 2.0  # CPUs a sandbox may use (docker; bwrap where a cpu cgroup can be made)
    # The whole grading of a submission (grader/judge/budget.py): this floor plus this many times what the lesson's
    # trusted runs took, plus the timed phases' own budgets
    budget_floor_s: float = 30.0
    budget_factor: float = 8.0


def limits_from(overrides: dict | None, base: Limits | None = None) -> Limits:
    """Limits with some fields replaced, e.g. {"memory_bytes": 8e9} from a CLI flag or a config file."""
    from dataclasses import fields, replace

    from grader.errors import EnvironmentProblem

    known = {f.name: f.type for f in fields(Limits)}
    changes = {}
    for name, value in (overrides or {}).items():
        if name not in known:
            raise EnvironmentProblem(f"unknown sandbox limit {name!r}: use one of {', '.join(known)}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise EnvironmentProblem(f"sandbox limit {name} must be a number, not {value!r}") from None
        if number <= 0:
            raise EnvironmentProblem(f"sandbox limit {name} must be positive")
        changes[name] = number if known[name] in (float, "float") else int(number)
    return replace(base or Limits(), **changes)


@dataclass(frozen=True)
class WorkerSpec:
    code: str
    filename: str  # e.g. submission.py: the name learners see in tracebacks
    exercise: dict  # Exercise.public(): never the reference solution
    device: str
    trace: bool = False
    threads: int = 1
    ranks: int = 1  # processes of the code in this one sandbox (grader/worker/ranks.py)
    compile_cache: str | None = None  # the host folder of the lesson's trusted compile cache (compile_cache.py)
    compiler: bool = False  # the lesson's code compiles: its worker loads torch.compile's machinery as a blank


def scratch_sizes(limits: Limits) -> tuple[int, int]:
    """(/tmp, /dev/shm) in bytes: the two writable places of a sandbox share `tmp_bytes`, a quarter of it for
    shared memory (64 MiB by default, Docker's own default), so what the code can write is bounded by one number."""
    shm = limits.tmp_bytes // 4
    return limits.tmp_bytes - shm, shm

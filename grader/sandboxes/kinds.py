"""Picks the launcher that runs learner code: docker, bwrap or local."""

from __future__ import annotations

from grader.errors import EnvironmentProblem
from grader.sandboxes.launcher import LocalLauncher
from grader.sandboxes.limits import Limits

SANDBOXES = ("auto", "docker", "bwrap", "local")
LOCAL_REFUSED = (
    "the local backend runs learner code unisolated, and it is not allowed here "
    "(allow it only for grading your own code)"
)


def unavailable_reason(name: str) -> str | None:
    """None when the backend can run here, else why not."""
    if name == "docker":
        from grader.sandboxes import docker_sandbox

        return docker_sandbox.unavailable_reason()
    if name == "bwrap":
        from grader.sandboxes import bwrap

        return bwrap.unavailable_reason()
    return None


def make_launcher(name: str = "auto", limits: Limits | None = None, *, allow_local: bool = True):
    """`auto` prefers docker, then bwrap, then (only where allowed) local. Each backend is probed once,
    here. Raises EnvironmentProblem when the asked-for backend cannot run here."""
    if name not in SANDBOXES:
        raise EnvironmentProblem(f"unknown sandbox {name!r}: use one of {', '.join(SANDBOXES)}")
    if name == "local":
        return _local(limits, allow_local)
    reasons = {}
    for candidate in ("docker", "bwrap") if name == "auto" else (name,):
        reasons[candidate] = unavailable_reason(candidate)
        if reasons[candidate] is None:
            return _isolating(candidate, limits)
    if name != "auto":
        raise EnvironmentProblem(f"the {name} sandbox cannot run: {reasons[name]}")
    if not allow_local:
        raise EnvironmentProblem(
            "no isolating sandbox is available: "
            + "; ".join(f"{n}: {why}" for n, why in reasons.items())
            + f"; and {LOCAL_REFUSED}"
        )
    return _local(limits, allow_local)


def _local(limits: Limits | None, allow_local: bool) -> LocalLauncher:
    if not allow_local:
        raise EnvironmentProblem(LOCAL_REFUSED)
    return LocalLauncher(limits)


def _isolating(name: str, limits: Limits | None):
    if name == "bwrap":
        from grader.sandboxes.bwrap_fork import ForkingBwrapLauncher

        return ForkingBwrapLauncher(limits)
    from grader.sandboxes.docker_sandbox import DockerLauncher

    return DockerLauncher(limits)


def unbounded_cpu(name: str) -> bool:
    """True where a grading in the sandbox `name` (`auto` resolved as make_launcher resolves it) may take every
    CPU of the host: bwrap where no cpu cgroup can be made. Docker holds each container to `Limits.cpus`, and so
    does bwrap with a cpu cgroup; local isolates nothing at all and is not counted here. The web worker runs one
    grading at a time where this is True (webapp.grading_capacity)."""
    if name == "auto":
        name = next((n for n in ("docker", "bwrap") if unavailable_reason(n) is None), "local")
    if name != "bwrap":
        return False
    from grader.sandboxes.cgroups import cpu_limit_available

    return not cpu_limit_available()

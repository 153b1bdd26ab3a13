"""Picks the launcher that runs learner code: docker, bwrap or local."""

from __future__ import annotations

from grader.errors import EnvironmentProblem
from grader.launcher import Limits, LocalLauncher

SANDBOXES = ("auto", "docker", "bwrap", "local")
LOCAL_REFUSED = ("the local backend runs learner code unisolated, and it is not allowed here "
                 "(allow it only for grading your own code)")


def unavailable_reason(name: str) -> str | None:
    """None when the backend can run here, else why not."""
    if name == "docker":
        from grader import docker_sandbox

        return docker_sandbox.unavailable_reason()
    if name == "bwrap":
        from grader import bwrap

        return bwrap.unavailable_reason()
    return None


def make_launcher(name: str = "auto", limits: Limits | None = None, *, allow_local: bool = True):
    """`auto` prefers docker, then bwrap, then (only where allowed) local.
    Raises EnvironmentProblem when the asked-for backend cannot run here."""
    if name not in SANDBOXES:
        raise EnvironmentProblem(f"unknown sandbox {name!r}: use one of {', '.join(SANDBOXES)}")
    if name == "auto":
        reasons = {n: unavailable_reason(n) for n in ("docker", "bwrap")}
        name = next((n for n, why in reasons.items() if why is None), "local")
        if name == "local" and not allow_local:
            raise EnvironmentProblem("no isolating sandbox is available: " + "; ".join(
                f"{n}: {why}" for n, why in reasons.items()) + f"; and {LOCAL_REFUSED}")
    if name == "local":
        if not allow_local:
            raise EnvironmentProblem(LOCAL_REFUSED)
        return LocalLauncher(limits)
    if name == "bwrap":
        from grader.bwrap import BwrapLauncher

        if (why := unavailable_reason("bwrap")) is not None:
            raise EnvironmentProblem(f"the bwrap sandbox cannot run: {why}")
        return BwrapLauncher(limits)
    from grader.docker_sandbox import DockerLauncher

    return DockerLauncher(limits)

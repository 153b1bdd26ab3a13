"""Whether this server may grade as configured, and the launcher it grades with:
checked by the app before it accepts a submission and by every grading worker
at start."""

from __future__ import annotations

from grader.errors import EnvironmentProblem
from grader.sandboxes.kinds import SANDBOXES


def sandbox_problem(config) -> str | None:
    """Why grading may not start with this configuration (checked by the app and the worker)."""
    name = config["SANDBOX"]
    if name not in SANDBOXES:
        return f"SANDBOX={name!r} is not one of {', '.join(SANDBOXES)}"
    if name == "local" and not config["ALLOW_LOCAL_SANDBOX"]:
        return (
            "SANDBOX='local' runs learner code without isolation; set ALLOW_LOCAL_SANDBOX=True only "
            "where learners grade their own code on their own machine"
        )
    return None


def check_sandbox(config):
    """Raises EnvironmentProblem unless this machine can run learner code as configured."""
    problem = sandbox_problem(config)
    if problem:
        raise EnvironmentProblem(problem)
    from grader.sandboxes.kinds import make_launcher
    from grader.sandboxes.limits import limits_from

    return make_launcher(
        config["SANDBOX"], limits_from(dict(config["SANDBOX_LIMITS"])), allow_local=bool(config["ALLOW_LOCAL_SANDBOX"])
    )

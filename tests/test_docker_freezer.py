"""The Docker sandbox's pause and unpause when the engine refuses them. runc's freezer refuses now and then under
load ("OCI runtime pause failed: unable to freeze", moby/moby#48205); a CI run once reported a live learner's
process of a timed lesson as having exited, most likely for it. The engine's refusal cannot be provoked on demand, so the
container here is a stand-in that refuses as the engine does; the pause path on a real engine runs in
every docker grading of a timed lesson (tests/test_sandbox.py)."""

from __future__ import annotations

import pytest

import docker
from grader.errors import EnvironmentProblem
from grader.sandboxes import docker_sandbox
from grader.sandboxes.docker_sandbox import ContainerHandle


class RefusingContainer:
    """Refuses the first `refusals` pauses and unpauses; `status` is what reload() reports."""

    def __init__(self, refusals: int, status: str = "running"):
        self.refusals, self.status, self.calls = refusals, status, []

    def reload(self):
        pass

    def _toggle(self, action):
        self.calls.append(action)
        if self.refusals > 0:
            self.refusals -= 1
            raise docker.errors.APIError("500", explanation="OCI runtime pause failed: unable to freeze: unknown")
        self.status = "paused" if action == "pause" else "running"

    def pause(self):
        self._toggle("pause")

    def unpause(self):
        self._toggle("unpause")


def handle_of(container) -> ContainerHandle:
    handle = object.__new__(ContainerHandle)  # no engine: only the freezer's logic is under test
    handle.container, handle._frozen = container, False
    return handle


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(docker_sandbox, "TOGGLE_PAUSE_S", 0.0)


def test_a_pause_the_engine_refuses_now_and_then_is_tried_again_on_a_running_container():
    container = RefusingContainer(refusals=2)
    handle = handle_of(container)
    handle.freeze()
    assert container.status == "paused" and container.calls == ["pause"] * 3
    container.refusals = 1
    handle.thaw()
    assert container.status == "running" and container.calls[3:] == ["unpause"] * 2


def test_a_container_that_stopped_is_the_workers_end_not_a_retry():
    container = RefusingContainer(refusals=9, status="exited")
    with pytest.raises(OSError, match="cannot pause the container"):
        handle_of(container).freeze()
    assert container.calls == ["pause"]


def test_an_engine_that_keeps_refusing_a_live_container_is_the_graders_problem_not_the_learners():
    container = RefusingContainer(refusals=99)
    with pytest.raises(EnvironmentProblem, match="would not pause a running sandbox"):
        handle_of(container).freeze()
    assert len(container.calls) == docker_sandbox.TOGGLE_TRIES

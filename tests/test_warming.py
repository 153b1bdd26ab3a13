"""A starting worker computes every lesson's trusted runs in the background (grader/judge/warming.py) below the
learners' gradings: it gives way while a grading holds the device or learners wait in the queue, so a learner's
first grading of a lesson waits for that lesson's own runs only, and its sandboxes run at the lowest CPU priority."""

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import TEST_LIMITS

from grader.errors import LessonCodeFailed
from grader.judge import trusted_runs
from grader.judge.warming import BackgroundWarm
from grader.lesson.loader import load_exercise
from grader.sandboxes import exclusive
from grader.sandboxes.bwrap import BwrapLauncher
from grader.sandboxes.kinds import unavailable_reason
from grader.sandboxes.launcher import LocalLauncher
from grader.sandboxes.pool import WarmPool
from grader.sandboxes.process import WorkerFailure

LESSONS = [SimpleNamespace(id=name) for name in ("first", "second", "third")]


@pytest.fixture(autouse=True)
def lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("AMP_DOJO_LOCK_DIR", str(tmp_path / "locks"))


class Lowered:
    def background(self):
        return self


class SlowLessons:
    """Lessons whose trusted runs take as long as `hold` is set (a long computation), or until cancelled."""

    def __init__(self):
        self.hold = threading.Event()
        self.hold.set()
        self.started: list[str] = []
        self.cancelled: list[str] = []

    def __call__(self, exercise, device, launcher, cancel):
        self.started.append(exercise.id)
        while self.hold.is_set():
            if cancel.wait(0.01):
                self.cancelled.append(exercise.id)
                raise WorkerFailure({"kind": "cancelled", "message": "cancelled"})
        return ["baseline", "reference"]


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_grading_stops_the_warm_at_once_and_no_other_lesson_starts_until_it_ends():
    lessons = SlowLessons()
    warm = BackgroundWarm(LESSONS, "cpu", Lowered(), compute=lessons, poll_s=0.02, quiet_s=0.2)
    warm.start()
    wait_for(lambda: lessons.started == ["first"])
    with exclusive.sharing("cpu"):  # a learner's grading, as runner.run holds the device
        began = time.monotonic()
        wait_for(lambda: lessons.cancelled == ["first"])
        assert time.monotonic() - began < 1.0
        time.sleep(0.5)  # the grading goes on: the warm starts nothing meanwhile
        assert lessons.started == ["first"]
    lessons.hold.clear()  # once the grading is over, the lesson it gave way in is computed again, then the rest
    warm.join(10)
    assert lessons.started == ["first", "first", "second", "third"]
    assert list(warm.done) == ["first", "second", "third"] and warm.gave_way == 1


def test_no_lesson_starts_while_learners_wait_in_the_queue():
    lessons, waiting = SlowLessons(), threading.Event()
    lessons.hold.clear()
    waiting.set()
    warm = BackgroundWarm(
        LESSONS, "cpu", Lowered(), learners_waiting=waiting.is_set, compute=lessons, poll_s=0.02, quiet_s=0.05
    )
    warm.start()
    time.sleep(0.4)
    assert lessons.started == []
    waiting.clear()
    warm.join(10)
    assert list(warm.done) == ["first", "second", "third"]


def test_a_lesson_that_cannot_be_warmed_leaves_the_others_warmed():
    def compute(exercise, device, launcher, cancel):
        if exercise.id == "second":
            raise LessonCodeFailed("the reference solution of 'second' failed on cpu: boom", "reference", 3)
        return ["baseline"]

    warm = BackgroundWarm(LESSONS, "cpu", Lowered(), compute=compute, poll_s=0.02, quiet_s=0.02)
    warm.start()
    warm.join(10)
    assert list(warm.done) == ["first", "third"]
    assert "boom" in warm.failed["second"]


def test_the_probe_sees_a_grading_holding_the_device_and_never_waits():
    assert not exclusive.in_use("cpu")
    with exclusive.sharing("cpu"):
        assert exclusive.in_use("cpu")
        assert not exclusive.in_use("cuda:0")
    with exclusive.alone("cpu"):
        began = time.monotonic()
        assert exclusive.in_use("cpu")
        assert time.monotonic() - began < 0.5
    assert not exclusive.in_use("cpu")


def test_a_cancelled_warm_stores_nothing():
    autocast = load_exercise("autocast")
    launcher = LocalLauncher(TEST_LIMITS)
    if trusted_runs.cached_run(launcher, autocast, "baseline", "cpu") is not None:
        pytest.skip("this process already holds the baseline")
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(WorkerFailure) as failed:
        trusted_runs.warm(autocast, "cpu", launcher, cancel)
    assert failed.value.payload["kind"] == "cancelled"
    assert trusted_runs.cached_run(launcher, autocast, "baseline", "cpu") is None


def policy_and_nice(pid: int) -> tuple[int, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return os.sched_getscheduler(pid), int(fields[16])  # field 19 of stat: nice


def test_a_background_sandbox_runs_at_idle_priority_and_a_learners_does_not():
    learners, background = LocalLauncher(TEST_LIMITS), LocalLauncher(TEST_LIMITS).background()
    assert not learners.idle
    for launcher, expected in ((learners, (os.sched_getscheduler(0), os.nice(0))), (background, (os.SCHED_IDLE, 19))):
        worker = launcher.prepare("cpu")
        try:
            assert policy_and_nice(worker.handle.proc.pid) == expected
        finally:
            worker.kill()  # not asked to exit: a starved idle process would answer late on a busy machine
            worker.close()


@pytest.mark.skipif(unavailable_reason("bwrap") is not None, reason="bubblewrap cannot run here")
def test_every_process_of_a_background_bwrap_sandbox_runs_at_idle_priority():
    worker = BwrapLauncher(TEST_LIMITS).background().prepare("cpu")
    try:  # bwrap itself: whatever it starts inherits both (the kernel's rule, across namespaces too)
        assert policy_and_nice(worker.handle.proc.pid) == (os.SCHED_IDLE, 19)
        group = worker.handle.group
        for path in group.paths if group is not None else []:
            if (path / "cpu.idle").exists():  # its own cgroup yields to the learners' groups too
                assert (path / "cpu.idle").read_text().strip() == "1"
    finally:
        worker.kill()
        worker.close()


def test_the_warm_leaves_the_pools_blanks_to_learners():
    pool = WarmPool(LocalLauncher(TEST_LIMITS), size=0)
    try:
        lowered = pool.background()
        assert isinstance(lowered, LocalLauncher) and lowered.idle and not pool.launcher.idle
    finally:
        pool.close()

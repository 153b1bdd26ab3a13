"""Trusted runs outlive the process that made them: a stored FP32 baseline and
reference serve later gradings (another process, a restart) without being run
again, keyed by everything that decides their numbers."""

import threading
import time

import pytest
from conftest import TEST_LIMITS

from grader import runner
from grader.judge import trusted_runs
from grader.lesson.loader import load_exercise
from grader.sandboxes import exclusive
from grader.sandboxes.launcher import LocalLauncher

AUTOCAST = load_exercise("autocast")


class CountingLauncher(LocalLauncher):
    def __init__(self):
        super().__init__(TEST_LIMITS)
        self.started = []

    def start(self, spec):
        self.started.append(spec.filename)
        return super().start(spec)


@pytest.fixture
def store(tmp_path):
    saved, suite_store = dict(trusted_runs._TRUSTED_CACHE), trusted_runs._STORE
    trusted_runs._TRUSTED_CACHE.clear()
    runner.use_trusted_store(trusted_runs.DirectoryStore(tmp_path / "trusted"))
    yield tmp_path / "trusted"
    runner.use_trusted_store(suite_store)
    trusted_runs._TRUSTED_CACHE.clear()
    trusted_runs._TRUSTED_CACHE.update(saved)


def test_a_stored_baseline_serves_a_later_process_without_running_again(store):
    first = CountingLauncher()
    assert runner.run(AUTOCAST, AUTOCAST.reference, device="cpu", launcher=first).status == "pass"
    assert sorted(first.started) == ["baseline.py", "reference.py", "submission.py"]
    assert len(list(store.glob("*.pt"))) == 2
    trusted_runs._TRUSTED_CACHE.clear()  # as in a new process: only the store remembers
    later = CountingLauncher()
    again = runner.run(AUTOCAST, AUTOCAST.starter, device="cpu", launcher=later)
    assert later.started == ["submission.py"]
    assert again.status == "fail" and again.check("parity").status == "pass"


def test_a_damaged_entry_is_computed_again(store):
    runner.run(AUTOCAST, AUTOCAST.reference, device="cpu", launcher=CountingLauncher())
    for path in store.glob("*.pt"):
        path.write_bytes(b"not a run")
    trusted_runs._TRUSTED_CACHE.clear()
    launcher = CountingLauncher()
    assert runner.run(AUTOCAST, AUTOCAST.reference, device="cpu", launcher=launcher).status == "pass"
    assert "baseline.py" in launcher.started


def test_the_key_changes_with_whatever_decides_the_numbers(monkeypatch):
    fields = {"workload", "baseline", "entrypoint", "checks"}
    lesson = AUTOCAST.model_dump_json(include=fields)
    reseeded = AUTOCAST.model_copy(
        update={"workload": AUTOCAST.workload.model_copy(update={"seed": AUTOCAST.workload.seed + 1})}
    ).model_dump_json(include=fields)
    base = trusted_runs.key("baseline", lesson, "cpu", "bwrap")
    assert base == trusted_runs.key("baseline", lesson, "cpu", "bwrap")
    assert base != trusted_runs.key("reference", lesson, "cpu", "bwrap")
    assert base != trusted_runs.key("baseline", reseeded, "cpu", "bwrap")
    assert base != trusted_runs.key("baseline", lesson, "cpu", "docker:sha256:abc")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_AMX_FP16")
    assert base != trusted_runs.key("baseline", lesson, "cpu", "bwrap")  # another oneDNN kernel set
    monkeypatch.setattr(trusted_runs, "grader_hash", lambda: "other grader code")
    assert base != trusted_runs.key("baseline", lesson, "cpu", "bwrap")


def test_timing_waits_until_no_other_grading_uses_the_device(tmp_path, monkeypatch):
    monkeypatch.setenv("AMP_DOJO_LOCK_DIR", str(tmp_path))
    events = []
    first_in = threading.Event()

    def correctness():
        with exclusive.sharing("cuda:0"):
            first_in.set()
            time.sleep(0.5)
            events.append("correctness done")

    def timing():
        first_in.wait()
        with exclusive.alone("cuda:0"):
            events.append("timing")
            time.sleep(0.3)
            events.append("timing done")  # still inside: after release the late one may enter at once

    def late_correctness():
        time.sleep(0.2)  # arrives while timing waits: it must not slip in before the timing
        with exclusive.sharing("cuda:0"):
            events.append("late correctness")

    threads = [threading.Thread(target=f) for f in (correctness, timing, late_correctness)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert events == ["correctness done", "timing", "timing done", "late correctness"]
    with exclusive.sharing("cpu"), exclusive.sharing("cpu"):  # sharing is shared; another device is apart
        with exclusive.alone("cuda:1"):
            pass


def test_a_stored_given_step_keeps_its_profile(store):
    """A profiling lesson's given step is a trusted run too: stored, it still carries the census the checks
    judge against and the torch.profiler table the results show."""
    lesson = load_exercise("profiling")
    first = CountingLauncher()
    assert runner.run(lesson, lesson.reference, device="cpu", launcher=first).status == "pass"
    assert sorted(first.started) == ["baseline.py", "given.py", "reference.py", "submission.py"]
    trusted_runs._TRUSTED_CACHE.clear()
    later = CountingLauncher()
    again = runner.run(lesson, lesson.starter, device="cpu", launcher=later)
    assert later.started == ["submission.py"]
    assert again.check("bottleneck").threshold["names"] == ["host_sync", "float32_matmul"]
    assert again.plots["profile"]["given"]["top_ops"] and again.check("host_syncs").status == "fail"

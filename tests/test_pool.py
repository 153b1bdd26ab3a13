"""Warm, single-use sandboxes (grader/sandboxes/pool.py): a blank worker is started and
has imported PyTorch before any submission exists, takes exactly one piece of
code, and is thrown away after it. Gradings from a pool give the verdicts of
cold starts without their start-up time."""

import os
import time

import pytest
from conftest import TEST_LIMITS

from grader import runner
from grader.judge.workers import loads_compiler_first
from grader.lesson.loader import load_exercise
from grader.sandboxes.kinds import make_launcher, unavailable_reason
from grader.sandboxes.launcher import LocalLauncher
from grader.sandboxes.limits import WorkerSpec
from grader.sandboxes.pool import WarmPool

AUTOCAST = load_exercise("autocast")
LEFT_BEHIND = """
import os, pathlib, tempfile
MARK = pathlib.Path(tempfile.gettempdir()) / "left-by-the-previous-learner"
SEEN = sorted(n for n in os.listdir(".") if not n.startswith("torchinductor_"))  # the grader's own cache
SEEN_MARK = MARK.exists()
MARK.write_text("secret of the previous learner")
""" + AUTOCAST.reference.replace(
    "    return loss",
    "    if SEEN_MARK or SEEN != ['submission.py']:\n"
    "        raise RuntimeError(f'LEAK {SEEN} {SEEN_MARK}')\n    return loss",
)


@pytest.fixture
def pool():
    made = WarmPool(LocalLauncher(TEST_LIMITS), size=1, devices=("cpu",))
    yield made
    made.close()


def test_a_blank_is_ready_before_any_submission_exists(pool):
    assert pool.wait_until_ready("cpu", timeout=90)
    blank = pool._ready[("cpu", False)][0]
    assert blank.ready and blank.spec is None
    assert [n for n in os.listdir(blank.workdir) if not n.startswith("torchinductor_")] == []


def test_each_submission_gets_a_sandbox_of_its_own_that_is_never_reused(pool):
    assert pool.wait_until_ready("cpu", timeout=90)
    spec = WorkerSpec("x = 1\n", "submission.py", AUTOCAST.public(), "cpu")
    first = pool.start(spec)
    second = pool.start(spec)
    try:
        assert first.handle.proc.pid != second.handle.proc.pid and first.workdir != second.workdir
        with pytest.raises(RuntimeError, match="one piece of code"):
            first.assign(spec)
    finally:
        first.close()
        second.close()
    assert pool.handed_out == 2


def test_a_pooled_grading_gives_the_cold_verdict_without_the_start_up(pool, grade):
    runner.run(AUTOCAST, AUTOCAST.reference, device="cpu", launcher=pool)  # the trusted runs, computed once
    assert pool.wait_until_ready("cpu", timeout=90)
    cold_before = pool.cold_starts
    started = time.perf_counter()
    warm = runner.run(AUTOCAST, AUTOCAST.starter, device="cpu", launcher=pool)
    assert pool.cold_starts == cold_before, "the grading did not get the warm sandbox"
    cold = grade("autocast", AUTOCAST.starter)
    assert warm.to_dict()["checks"] == cold.to_dict()["checks"]
    assert time.perf_counter() - started < 60


def test_a_blank_that_died_while_waiting_is_never_handed_out(pool):
    assert pool.wait_until_ready("cpu", timeout=90)
    blank = pool._ready[("cpu", False)][0]
    blank.kill()
    result = runner.run(AUTOCAST, AUTOCAST.reference, device="cpu", launcher=pool)
    assert result.status == "pass" and pool.cold_starts >= 1


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_a_warm_sandbox_holds_nothing_of_the_previous_submission(backend):
    """Two gradings in a row from one pool: the second sees only its own file and no trace of the first
    (which wrote to its temporary folder); bwrap gives each its own /tmp, as docker does."""
    if backend != "local" and (why := unavailable_reason(backend)):
        pytest.skip(why)
    base = make_launcher(backend, TEST_LIMITS, allow_local=True)
    pool = WarmPool(base, size=2, devices=("cpu",))
    try:
        assert pool.wait_until_ready("cpu", timeout=120)
        for _ in range(2):
            result = runner.run(AUTOCAST, LEFT_BEHIND, device="cpu", launcher=pool)
            assert result.error is None and result.status == "pass", (result.error, result.output[-500:])
    finally:
        pool.close()


# Fails at import, so that `init` fails, unless the worker is of the kind asked: a compile lesson's blank has the
# real torch._dynamo and inductor's compiler loaded before the code arrives; any other keeps torch._dynamo out.
KIND_CHECK = """
import sys
LOADED = type(sys.modules.get("torch._dynamo")).__name__ == "module" and "torch._inductor.compile_fx" in sys.modules
if LOADED != {compiler}:
    raise RuntimeError(f"compiler loaded: {{LOADED}}")
"""


@pytest.mark.parametrize("compiler", [True, False], ids=["compile lesson", "plain lesson"])
def test_a_compile_lessons_blank_has_loaded_the_compiler_before_its_code_arrives(compiler):
    pool = WarmPool(LocalLauncher(TEST_LIMITS), size=1, devices=("cpu",), compiler=True, refill=False)
    try:
        assert pool.wait_until_ready("cpu", timeout=120, compiler=True)
        assert pool.ready_count("cpu", compiler=False) == 0, "a plain lesson's blanks start only when asked for"
        code = KIND_CHECK.format(compiler=compiler) + AUTOCAST.reference
        worker = pool.start(WorkerSpec(code, "submission.py", AUTOCAST.public(), "cpu", compiler=compiler))
        try:
            worker.wait_ready()
            reply = worker.request(worker.init_message(), timeout=60)
        finally:
            worker.close()
        assert reply.get("ok", True), reply
        assert pool.cold_starts == (0 if compiler else 1), "a blank of the other kind was handed out"
    finally:
        pool.close()


def test_a_trusted_run_being_computed_starts_without_the_compiler_loaded():
    """What a trusted run measures bounds a learner's whole grading: it must include loading the compiler, as a
    learner's worker that did not load it first (a cold start, a forked worker) pays for it too."""
    compiling = load_exercise("compile_autocast")
    learners = LocalLauncher(TEST_LIMITS)
    assert loads_compiler_first(learners, compiling, "any learner's code")
    assert not loads_compiler_first(learners.trusted(), compiling, compiling.reference)
    assert not loads_compiler_first(learners, compiling, compiling.baseline)
    assert not loads_compiler_first(learners, AUTOCAST, "any learner's code")

"""The suite's local gradings fork their workers from a zygote (grader/sandboxes/zygote.py): a forked worker must
be the process `python -m grader.worker` would have started, or the suite would test something else than what
learners run."""

import json

import pytest
from conftest import TEST_LIMITS

from grader import runner
from grader.lesson.loader import load_exercise
from grader.sandboxes.launcher import LocalLauncher
from grader.sandboxes.zygote import ForkLauncher

AUTOCAST = load_exercise("autocast")

# What a worker's process looks like from inside, printed when the learner's module loads (workdir-relative).
SELF_PORTRAIT = """
import json, os, resource, signal, sys, tempfile, threading

import torch

here = os.getcwd()
print("PORTRAIT " + json.dumps({
    "env": {k: v.replace(here, "<workdir>") for k, v in sorted(os.environ.items())},
    "tmp": tempfile.gettempdir().replace(here, "<workdir>"),
    "path0": sys.path[0].replace(here, "<workdir>"),
    "own_session": os.getsid(0) == os.getpid(),
    "limits": [resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_CORE")],
    "sigpipe": str(signal.getsignal(signal.SIGPIPE)),
    "sigint": str(signal.getsignal(signal.SIGINT)),
    "threads": threading.active_count(),
    "torch_threads": torch.get_num_threads(),
    "stdin_readable": bool(sys.stdin) and sys.stdin.read() == "",
}), flush=True)
"""


def portrait(launcher) -> dict:
    source = SELF_PORTRAIT + AUTOCAST.reference
    result = runner.run(AUTOCAST, source, device="cpu", launcher=launcher)
    assert result.status == "pass", result.error
    line = next(line for line in result.output.splitlines() if line.startswith("PORTRAIT "))
    return json.loads(line.removeprefix("PORTRAIT "))


@pytest.mark.slow
def test_a_forked_worker_is_the_process_a_fresh_one_would_be():
    forked = ForkLauncher(TEST_LIMITS)
    try:
        assert portrait(forked) == portrait(LocalLauncher(TEST_LIMITS))
    finally:
        forked.close()


@pytest.mark.slow
def test_forked_workers_of_one_zygote_keep_their_own_folders_and_leave_no_process():
    forked = ForkLauncher(TEST_LIMITS)
    try:
        first, second = forked.prepare("cpu").wait_ready(), forked.prepare("cpu").wait_ready()
        assert first.workdir != second.workdir
        pids = [w.handle.pid for w in (first, second)]
        for worker in (first, second):
            worker.close()
        assert all(not worker.handle.alive() for worker in (first, second))
        assert all(not worker.workdir.exists() for worker in (first, second))
        assert len(set(pids)) == 2
    finally:
        forked.close()

"""The verdict is decided by the grading process: what learner code prints,
patches or reads in its own process does not change it, and it never sees the
reference solution or the grader's environment."""

from grader import runner
from grader.launcher import Limits, LocalLauncher, WorkerSpec
from grader.loader import load_exercise


def test_printed_and_patched_claims_do_not_change_the_verdict(grade):
    source = '''
import json, sys, torch, torch.nn.functional as F
import grader.tracing
print(json.dumps({"ok": True, "losses": [0.0], "scales": []}))
torch.is_autocast_enabled = lambda *a: True


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    sys.stdout.write('{"status": "pass", "score": 1.0}\\n')
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss
'''
    result = grade("autocast", source)
    assert result.status == "fail"
    assert result.check("coverage").status == "fail"
    assert '"status": "pass"' in result.output  # shown to the learner as text, nothing more


def test_worker_environment_carries_no_secrets(monkeypatch, grade):
    monkeypatch.setenv("AMP_DOJO_SECRET_KEY", "hunter2")
    source = '''
import os


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    raise RuntimeError("env:" + ",".join(sorted(os.environ)) + ":" + os.environ.get("AMP_DOJO_SECRET_KEY", "none"))
'''
    ex = load_exercise("autocast")
    result = runner.run(ex, source, device="cpu", launcher=LocalLauncher(Limits(step_timeout_s=20)))
    assert result.error.kind == "exception"
    assert "hunter2" not in result.error.message and ":none" in result.error.message


def test_submission_process_never_receives_the_reference():
    ex = load_exercise("grad_scaler")
    worker = LocalLauncher().start(WorkerSpec("x = 1\n", "submission.py", ex.public(), "cpu"))
    try:
        files = {p.name: p.read_text() for p in worker.workdir.iterdir()}
    finally:
        worker.close()
    assert ex.reference not in "".join(files.values())
    assert set(files) == {"submission.py", "spec.json"}


def test_output_is_bounded(grade):
    source = '''
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    print("x" * 1_000_000)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss
'''
    result = grade("autocast", source)
    assert len(result.output) < 300_000 and "output truncated" in result.output


class RecordingLauncher(LocalLauncher):
    """A local launcher that remembers the workers it started."""

    def __init__(self):
        super().__init__(Limits(step_timeout_s=20))
        self.started = []

    def start(self, spec):
        worker = super().start(spec)
        self.started.append(worker)
        return worker


def test_worker_processes_are_gone_after_grading():
    launcher = RecordingLauncher()
    runner.run(load_exercise("autocast"), load_exercise("autocast").reference, device="cpu", launcher=launcher)
    assert launcher.started, "the grading started no worker"
    assert all(not w.handle.alive() for w in launcher.started)
    assert all(not w.workdir.exists() for w in launcher.started)

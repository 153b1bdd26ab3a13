"""The verdict is decided by the grading process: what learner code prints,
patches or reads in its own process does not change it, and it never sees the
reference solution or the grader's environment."""

import json

import pytest
from conftest import ROOT
from forgery import forger

from grader import runner
from grader.lesson.loader import load_exercise
from grader.sandboxes.launcher import LocalLauncher
from grader.sandboxes.limits import Limits, WorkerSpec


def test_printed_and_patched_claims_do_not_change_the_verdict(grade):
    source = """
import json, sys, torch, torch.nn.functional as F
import grader.worker.tracing
print(json.dumps({"ok": True, "losses": [0.0], "scales": []}))
torch.is_autocast_enabled = lambda *a: True


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    sys.stdout.write('{"status": "pass", "score": 1.0}\\n')
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss
"""
    result = grade("autocast", source)
    assert result.status == "fail"
    assert result.check("coverage").status == "fail"
    assert '"status": "pass"' in result.output  # shown to the learner as text, nothing more


def test_worker_environment_carries_no_secrets(monkeypatch, grade):
    monkeypatch.setenv("AMP_DOJO_SECRET_KEY", "hunter2")
    source = """
import os


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    raise RuntimeError("env:" + ",".join(sorted(os.environ)) + ":" + os.environ.get("AMP_DOJO_SECRET_KEY", "none"))
"""
    ex = load_exercise("autocast")
    result = runner.run(ex, source, device="cpu", launcher=LocalLauncher(Limits(step_timeout_s=20)))
    assert result.error.kind == "exception"
    assert "hunter2" not in result.error.message and ":none" in result.error.message


def test_submission_process_never_receives_the_reference():
    ex = load_exercise("grad_scaler")
    worker = LocalLauncher().start(WorkerSpec("x = 1\n", "submission.py", ex.public(), "cpu"))
    try:
        files = {p.name: p.read_text() for p in worker.workdir.iterdir()}
        init = json.dumps(worker.init_message())
    finally:
        worker.close()
    assert ex.reference not in "".join(files.values()) and ex.reference not in init
    assert set(files) == {"submission.py"}


def test_output_is_bounded(grade):
    source = """
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    print("x" * 1_000_000)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss
"""
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


FORGED_REPLIES = {
    "not_an_object": b"[]\n",
    "error_not_an_object": b'{"ok": false, "error": "x"}\n',
    "claims_grader_fault": b'{"ok": false, "error": {"kind": "internal", "message": "the grader broke"}}\n',
    "invalid_utf8": b"\xff\xfe\n",
    "deep_nesting": b"[" * 100_000 + b"\n",
    "infinite_memory": b'{"ok": true, "losses": [1.0], "scales": [], "memory": Infinity}\n',
    "nan_loss": b'{"ok": true, "losses": [NaN], "scales": []}\n',
    "no_losses": b'{"ok": true, "losses": [], "scales": []}\n',
    "bad_coverage": b'{"ok": true, "losses": [1.0], "scales": [], "coverage": {"flops": {"bfloat16": "x"}, '
    b'"by_module": {}}}\n',
}

FORGING_STEP = """
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    for fd in writable_pipes():
        os.write(fd, FORGED)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss
"""


@pytest.mark.parametrize("name", sorted(FORGED_REPLIES))
def test_forged_reply_ends_as_the_submissions_error_never_as_a_grader_crash(name):
    ex = load_exercise("autocast")
    source = forger(FORGED_REPLIES[name]) + FORGING_STEP
    result = runner.run(ex, source, device="cpu", launcher=LocalLauncher(Limits(step_timeout_s=20)))
    assert result.status in ("error", "fail"), result.to_dict()
    assert result.status == "error" or result.check("coverage").status == "fail"


# A profiling lesson's fixed step, with its slowdowns hidden from the census instead of removed.
PROFILED_STEP = """
import torch
import torch.nn.functional as F

CLASS_WEIGHTS = [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
BOTTLENECKS = {"host_sync", "float32_matmul", "host_device_copy"}
{prelude}

def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        h = model.encoder(inputs)
        with torch.autocast(device_type=device_type, enabled=False):
            h = model.mixer(h.float())
        loss = F.cross_entropy(model.head(h), targets, weight=torch.tensor(CLASS_WEIGHTS, device=inputs.device))
    loss.backward()
    optimizer.step()
    {sync}
    return loss
"""
HIDDEN = {
    # replaces a census method: the plain patch is seen
    "patched_method": (
        "import grader.worker.census\ngrader.worker.census.Census.note = lambda self, key, nbytes=0: None",
        "print(f'loss {loss:.4f}')",
    ),
    # the census's own code swapped in place (the function object stays the same): float32 matmuls vanish
    "swapped_code": (
        "import grader.worker.census as P\n"
        "P._kept_note = P.Census.note.__class__(P.Census.note.__code__, P.__dict__)\n"
        "exec('def note(self, key, nbytes=0):\\n'\n"
        '     \'    if key[0] == "matmul" and key[2] == "float32": return\\n\'\n'
        "     '    return _kept_note(self, key, nbytes)', P.__dict__)\n"
        "P.Census.note.__code__ = P.__dict__['note'].__code__",
        "",
    ),
    # dispatch modes turned off around the sync
    "modes_off": (
        "from torch.utils._python_dispatch import _disable_current_modes",
        "with _disable_current_modes(): print(f'loss {loss:.4f}')",
    ),
}


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_slowdowns_hidden_from_the_census_do_not_pass(name, grade):
    prelude, sync = HIDDEN[name]
    result = grade("profiling", PROFILED_STEP.replace("{prelude}", prelude).replace("{sync}", sync))
    assert result.status != "pass", result.to_dict()
    if name == "swapped_code":  # undetectable in the process; the weights it trained say float32
        dtypes = result.check("matmul_dtypes")
        assert dtypes.status == "fail" and dtypes.findings[0].id == "numbers_of_given_step", dtypes
    else:
        assert result.error is not None and result.error.kind == "tampering", result.to_dict()


PEAK_RSS = """
import json, resource, sys
from grader import runner
from grader.sandboxes.launcher import Limits, LocalLauncher
from grader.lesson.loader import load_exercise

ex = load_exercise("autocast")
source = ex.reference if sys.argv[1] == "reference" else open(sys.argv[1]).read()
result = runner.run(ex, source, device="cpu", launcher=LocalLauncher(Limits(step_timeout_s=20)))
error = {"kind": result.error.kind, "message": result.error.message} if result.error else None
print(json.dumps({"error": error, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _graded_in_a_process_of_its_own(source_arg: str) -> dict:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, source_arg], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_oversized_parameters_end_as_a_protocol_error_and_the_grading_process_stays_small():
    """A model grown by 96 MiB of ballast: its saved parameters (128 MiB of base64) were read, parsed and decoded
    by the grading process, which is not sandboxed, several copies at once. The reply is now capped near the size
    of the model the grader built itself, and the grading process's peak memory is that of a normal grading."""
    normal = _graded_in_a_process_of_its_own("reference")
    attacked = _graded_in_a_process_of_its_own(str(ROOT / "tests" / "attacks" / "oversized_params.py"))
    assert attacked["error"]["kind"] == "protocol", attacked
    assert "saved parameters were over" in attacked["error"]["message"], attacked
    assert attacked["peak_mb"] <= normal["peak_mb"] + 100, (normal, attacked)


def test_any_signal_number_is_worded():
    from grader.sandboxes.process import death_failure
    from grader.worker.wire import signal_name

    assert signal_name(11) == "SIGSEGV" and signal_name(40) == "SIGRTMIN+6" and signal_name(99) == "signal 99"
    assert "SIGRTMIN+6" in death_failure(-40, oom=False)["message"]

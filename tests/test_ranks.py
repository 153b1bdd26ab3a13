"""Lessons whose code runs as several ranks (workload.ranks) and prepares once
(entrypoint.prepare): each rank gets its share of the batch, the grader loads
every rank's weights itself and decides whether they agree, a rank that fails,
dies or hangs is named without the others keeping the grading waiting, and
forged replies from a rank end as the submission's error."""

import base64
import io
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
from conftest import ROOT, TEST_LIMITS
from forgery import forger

from grader import runner
from grader.checks import ranks as ranks_check
from grader.judge import evaluate, protocol
from grader.judge.drive import RunData
from grader.judge.protocol import StepFailure, rank_replies
from grader.lesson.check_specs import RanksCheck
from grader.lesson.loader import load_exercise, parse_exercise
from grader.sandboxes.launcher import LocalLauncher
from grader.sandboxes.process import WorkerFailure
from grader.worker import workload
from grader.worker.ranks import combined

DDP = "ddp_mixed_precision"
LESSON = ROOT / "exercises" / f"{DDP}.yaml"


def ddp_source(prepare_body: str = "    return DDP(model.to(device))", step_extra: str = "") -> str:
    """The reference's step with another prepare, and `step_extra` run at the start of every step."""
    return f"""import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def prepare(model, device):
{prepare_body}


def train_step(model, optimizer, scaler, micro_batches, device_type, amp_dtype):
{step_extra}
    n = len(micro_batches)
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for i, (inputs, targets) in enumerate(micro_batches):
        with contextlib.nullcontext() if i == n - 1 else model.no_sync():
            with torch.autocast(device_type=device_type, dtype=amp_dtype):
                loss = F.cross_entropy(model(inputs), targets) / n
            scaler.scale(loss).backward()
        total += loss.item()
    scaler.step(optimizer)
    scaler.update()
    return total
"""


def line_of(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if needle in line)


# -- data and the lesson format -------------------------------------------------------------------------------


def test_the_ranks_share_every_micro_batch_and_together_see_the_whole_batch():
    problem = workload.build_problem(load_exercise(DDP).workload.model_dump())
    whole = problem.arguments(["micro_batches"], 3)[0]
    shares = [problem.arguments(["micro_batches"], 3, rank=r, world_size=2)[0] for r in range(2)]
    assert len(shares[0]) == len(shares[1]) == len(whole) == 4
    for k, (inputs, targets) in enumerate(whole):
        assert torch.equal(torch.cat([shares[0][k][0], shares[1][k][0]]), inputs)
        assert torch.equal(torch.cat([shares[0][k][1], shares[1][k][1]]), targets)
    assert not torch.equal(shares[0][0][0], shares[1][0][0])


def test_a_batch_the_ranks_cannot_share_equally_is_the_lessons_error():
    with pytest.raises(workload.SetupError, match="which 2 ranks cannot share equally"):
        workload.shard([(torch.zeros(5, 3), torch.zeros(5))], "micro_batches", 1, 2)


def test_the_models_stay_on_the_cpu_for_a_prepare_that_moves_them():
    spec = load_exercise(DDP).workload.model_dump()
    assert spec["move_models"] is False
    problem = workload.build_problem(spec, "meta")
    assert next(problem.models["model"].parameters()).device.type == "cpu"


def _lesson_with(tmp_path, old: str, new: str):
    path = tmp_path / f"{DDP}.yaml"
    path.write_text(LESSON.read_text().replace(old, new, 1))
    return parse_exercise(path)


def test_a_ranks_check_without_ranks_is_refused_at_the_workload(tmp_path):
    exercise, problems = _lesson_with(tmp_path, "  ranks: 2\n", "")
    assert exercise is None and [p.field for p in problems] == ["workload.ranks"], problems
    assert problems[0].line and "compares the weights of several ranks" in problems[0].message


def test_a_speedup_check_with_ranks_is_refused_at_the_checks(tmp_path):
    exercise, problems = _lesson_with(
        tmp_path, "  - id: ranks\n", "  - id: ranks\n  - id: speedup\n    min_speedup: {cuda: 1.3}\n"
    )
    assert exercise is None and [p.field for p in problems] == ["checks"], problems
    assert "speedup cannot grade a workload with ranks > 1" in problems[0].message


def test_a_prepare_that_takes_per_step_data_is_refused_with_its_field(tmp_path):
    exercise, problems = _lesson_with(tmp_path, "    params: [model, device]\n", "    params: [model, micro_batches]\n")
    assert not problems
    problem = workload.build_problem(exercise.workload.model_dump()).unprovided_by(exercise.entrypoint.model_dump())
    assert problem.startswith("entrypoint.prepare.params: micro_batches is not something prepare can take")


def test_move_models_false_without_prepare_is_refused(tmp_path):
    text = (
        (ROOT / "exercises" / "multiple_models.yaml")
        .read_text()
        .replace("  steps: 8\n", "  steps: 8\n  move_models: false\n", 1)
    )
    path = tmp_path / "multiple_models.yaml"
    path.write_text(text)
    _, problems = parse_exercise(path)
    assert [p.field for p in problems] == ["workload.move_models"], problems
    assert "add entrypoint.prepare" in problems[0].message


# -- grading: what the ranks receive and how their failures read -------------------------------------------------


def test_each_rank_gets_its_rank_a_process_group_and_what_prepare_returned(grade):
    source = ddp_source(
        step_extra="""    import os
    assert dist.is_initialized() and dist.get_world_size() == 2, "no process group"
    assert isinstance(model, DDP), type(model)
    assert os.environ["RANK"] == str(dist.get_rank()) and os.environ["WORLD_SIZE"] == "2"
    assert len(micro_batches[0][0]) == 16, len(micro_batches[0][0])"""
    )
    result = grade(DDP, source)
    assert result.status == "pass", result.to_dict()
    assert result.check("ranks").measured["ranks"] == 2


def test_an_exception_on_one_rank_is_named_with_its_rank_and_line(grade):
    source = ddp_source(
        step_extra="""    if dist.get_rank() == 1:
        raise ValueError("only rank 1 fails")"""
    )
    result = grade(DDP, source)
    # rank 0 was left waiting in an all-reduce: the error is rank 1's, not a timeout
    assert result.error.kind == "exception" and result.error.line == line_of(source, "only rank 1 fails")
    assert f"rank 1: line {result.error.line}: ValueError: only rank 1 fails" in result.error.message


def test_a_rank_that_dies_is_named_and_the_other_is_not_left_waiting(grade):
    source = ddp_source(
        step_extra="""    if dist.get_rank() == 1:
        os._exit(3)"""
    ).replace("import contextlib\n", "import contextlib\nimport os\n", 1)
    result = grade(DDP, source)
    assert result.error.kind == "exit", result.error
    assert "rank 1:" in result.error.message and "status 3" in result.error.message


def test_an_exception_in_prepare_is_reported_at_its_line(grade):
    source = ddp_source('    raise RuntimeError("prepare broke")')
    result = grade(DDP, source)
    assert result.error.kind == "exception" and result.error.line == line_of(source, "prepare broke")
    assert f"rank 0: line {result.error.line}: RuntimeError: prepare broke" in result.error.message


def test_sys_exit_in_prepare_is_named_as_prepares_not_the_steps(grade):
    source = ddp_source("    import sys\n    sys.exit(0)  # leave early")
    result = grade(DDP, source)
    assert result.error.kind == "exit", result.error
    assert result.error.line == line_of(source, "sys.exit(0)")
    assert "sys.exit() in prepare, which the grader calls once before the training steps" in result.error.message
    assert "during the training step" not in result.error.message


def test_a_prepare_that_returns_the_wrong_number_of_values_is_named(grade):
    result = grade(
        "accelerate",
        load_exercise("accelerate").reference.replace(
            "    return accelerator, model, optimizer", "    return accelerator, model", 1
        ),
    )
    assert result.error.kind == "return"
    assert (
        "prepare must return 3 values, in this order: accelerator, model, optimizer (got tuple)" in result.error.message
    )


def test_a_rank_that_hangs_times_out_at_a_line_of_a_stuck_rank():
    """The supervisor passes the grader's request for stack dumps on to every rank; the line is where one of the
    stuck ranks was: rank 1 in its sleep, or rank 0 in the backward whose all-reduce waits for rank 1."""
    source = ddp_source(
        step_extra="""    if dist.get_rank() == 1:
        import time
        time.sleep(10**6)"""
    )
    launcher = LocalLauncher(replace(TEST_LIMITS, step_timeout_s=6))
    result = runner.run(load_exercise(DDP), source, device="cpu", launcher=launcher)
    assert result.error.kind == "timeout"
    assert result.error.line in (line_of(source, "time.sleep(10**6)"), line_of(source, "scaler.scale(loss).backward()"))


# -- the verdict is the grader's -----------------------------------------------------------------------------------


class Ranked:
    ranks = 2
    spec = SimpleNamespace(code="pass\n" * 20)  # the lines a rank's report may name (grader/judge/protocol.py)


def _ok(**extra):
    return {"ok": True, "losses": [1.0], "scales": [], **extra}


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": True, "ranks": [_ok()]},  # one rank missing
        {"ok": True, "ranks": [_ok(), "yes"]},  # a rank's reply is no object
        {"ok": True, "ranks": None},
        {"ok": True, "losses": [1.0], "scales": []},  # a single worker's reply
    ],
    ids=["missing_rank", "not_an_object", "no_list", "not_ranked"],
)
def test_a_ranked_reply_of_the_wrong_shape_is_the_workers_failure(reply):
    with pytest.raises(WorkerFailure):
        rank_replies(Ranked(), reply)


def test_one_rank_saying_ok_does_not_hide_the_others_error():
    reply = {"ok": True, "ranks": [_ok(), {"ok": False, "error": {"kind": "exception", "message": "boom", "line": 7}}]}
    with pytest.raises(StepFailure) as caught:
        rank_replies(Ranked(), reply)
    assert caught.value.payload["line"] == 7


def test_an_error_keeps_its_rank_and_the_answering_ranks_traces():
    replies = {
        0: _ok(traces=[{"step": 0, "events": [{"ev": "scaler_step", "line": 3}]}]),
        1: {"ok": False, "error": {"kind": "exception", "message": "boom", "line": 9}},
    }
    with pytest.raises(StepFailure) as caught:
        rank_replies(Ranked(), combined(replies, 2))
    payload = caught.value.payload
    assert payload["rank"] == 1 and payload["line"] == 9
    assert payload["rank_traces"] == [{"step": 0, "events": [{"ev": "scaler_step", "line": 3}], "rank": 0}]


def test_a_claimed_rank_out_of_range_is_dropped():
    reply = {"ok": False, "error": {"kind": "exception", "message": "x", "rank": 7}}
    with pytest.raises(StepFailure) as caught:
        rank_replies(Ranked(), reply)
    assert caught.value.payload["rank"] is None


def _run(params: dict, scales=(65536.0,)) -> RunData:
    return RunData(params=params, scales=list(scales))


def test_the_ranks_check_compares_the_weights_the_grader_loaded():
    start = {"w": torch.zeros(4), "b": torch.zeros(2)}
    trained = {"w": torch.ones(4), "b": torch.ones(2)}
    spec = RanksCheck(id="ranks")
    same = ranks_check.check(spec, [_run(trained), _run({k: v.clone() for k, v in trained.items()})], start)
    assert same.status == "pass" and same.measured["max_rank_update_rel_diff"] == 0
    apart = ranks_check.check(spec, [_run(trained), _run({"w": torch.ones(4), "b": torch.zeros(2)})], start)
    assert apart.status == "fail" and apart.measured["worst_param"] == "b" and apart.measured["worst_rank"] == 1
    assert [f.id for f in apart.findings] == ["ranks_disagree"]
    missing = ranks_check.check(spec, [_run(trained), _run({"w": torch.ones(4)})], start)
    assert missing.status == "fail" and missing.measured["worst_param"] == "b"
    assert missing.measured["max_rank_update_rel_diff"] is None  # infinitely far: a tensor rank 1 does not have


def test_the_ranks_check_names_a_loss_scale_that_differs():
    params = {"w": torch.ones(3)}
    result = ranks_check.check(
        RanksCheck(id="ranks"),
        [_run(params, (65536.0, 32768.0)), _run(dict(params), (65536.0, 65536.0))],
        {"w": torch.zeros(3)},
    )
    assert result.status == "fail" and [f.id for f in result.findings] == ["scales_disagree"]
    assert "rank 1's loss scale was 65536 after step 1, rank 0's 32768" in result.message


FORGE_ON_RANK_1 = """

def forge():
    if dist.get_rank() == 1:
        for fd in writable_pipes():
            os.write(fd, FORGED)
"""

FORGED_BY_A_RANK = {
    "ranks_agree": b'{"ok": true, "ranks": [{"ok": true, "losses": [0.1], "scales": [65536.0]}]}\n',
    "params_of_nothing": b'{"ok": true, "params": "' + base64.b64encode(b"not a tensor file") + b'"}\n',
    "a_step_ahead": b'{"ok": true, "losses": [0.1], "scales": [65536.0]}\n',
    "garbage": b"\xff\xfe\n",
}


@pytest.mark.parametrize("name", sorted(FORGED_BY_A_RANK))
def test_a_rank_that_forges_a_reply_ends_as_the_submissions_error(name, grade):
    """Rank 1 never steps (its weights stay behind) and writes a forged reply to every pipe it can find."""
    source = ddp_source(step_extra="    forge()").replace(
        "    scaler.step(optimizer)\n    scaler.update()\n",
        "    if dist.get_rank() == 0:\n        scaler.step(optimizer)\n    scaler.update()\n",
        1,
    )
    source = source.replace("def prepare(", forger(FORGED_BY_A_RANK[name]) + FORGE_ON_RANK_1 + "\n\ndef prepare(", 1)
    result = grade(DDP, source)
    assert result.status in ("error", "fail"), result.to_dict()
    assert result.status == "error" or result.check("ranks").status == "fail"


def test_saved_parameters_are_loaded_as_plain_tensors_only():
    class Evil:
        def __reduce__(self):
            return (print, ("code ran",))

    buffer = io.BytesIO()
    torch.save({"0.weight": Evil()}, buffer)
    reply = {"ok": True, "params": base64.b64encode(buffer.getvalue()).decode()}
    with pytest.raises(WorkerFailure, match="could not be read"):
        protocol._params(reply)


# -- Accelerate in the sandbox ---------------------------------------------------------------------------------------


def test_workers_tell_libraries_there_is_no_network_and_talk_on_loopback():
    from grader.sandboxes.launcher import worker_env

    env = worker_env("/tmp", 1)
    assert env["HF_HUB_OFFLINE"] == "1" and env["HF_HUB_DISABLE_TELEMETRY"] == "1"
    assert env["GLOO_SOCKET_IFNAME"] == "lo" and env["NCCL_SOCKET_IFNAME"] == "lo"


def test_accelerate_tries_no_connection_when_imported_prepared_and_trained(tmp_path):
    """Run as a worker runs: the worker's environment, every socket connection recorded (and refused)."""
    import subprocess
    import sys

    from grader.sandboxes.launcher import worker_env

    script = tmp_path / "probe.py"
    script.write_text("""
import socket
tried = []
def refuse(self, address, *a, **k):
    tried.append(address)
    raise OSError("no network in the sandbox")
socket.socket.connect = refuse
socket.create_connection = lambda address, *a, **k: refuse(None, address)
import torch
import torch.nn.functional as F
from accelerate import Accelerator
accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)
model = torch.nn.Linear(4, 2)
model, optimizer = accelerator.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
for _ in range(2):
    with accelerator.accumulate(model):
        accelerator.backward(F.cross_entropy(model(torch.randn(3, 4)), torch.tensor([0, 1, 0])))
        optimizer.step()
        optimizer.zero_grad()
print("connections:", tried)
""")
    env = worker_env(str(tmp_path), 1, pythonpath=str(ROOT))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "connections: []" in done.stdout, done.stdout


def test_a_rank_error_names_the_rank_before_the_line_as_the_docs_show():
    """docs/authoring.md documents `rank 1: line 23: ...`: whose error first, then where."""
    error = evaluate.submission_error({"kind": "exception", "message": "ValueError: x", "line": 23, "rank": 1})
    assert error.message == "rank 1: line 23: ValueError: x"

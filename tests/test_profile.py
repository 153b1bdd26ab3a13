"""The profiling lesson's instruments and checks: the census counts the root
cause of a slow step (the host reading a device value, whatever the spelling;
a matmul in float32; a copy) at the learner's line, and the checks judge the
fixed step against the grader's own profile of the given step."""

import json
import subprocess
import sys

import pytest
import torch

from grader import runner
from grader.checks import profiling
from grader.judge import protocol
from grader.lesson.check_specs import BottleneckCheck, HostSyncsCheck, MatmulDtypesCheck, TransfersCheck
from grader.worker import census

LEARNER = """\
import torch
import torch.nn.functional as F


def remember(t):
    return t.item()


def step(model, x, y, kind):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = model[0](x)
        with torch.autocast("cpu", enabled=False):
            h = model[1](h.float())
    out = model[2](h)
    loss = F.cross_entropy(out, y)
    loss.backward()
    if kind == "item": loss.item()
    if kind == "float": float(loss)
    if kind == "fstring": f"{loss:.3f}"
    if kind == "print": print(loss)
    if kind == "tolist": loss.tolist()
    if kind == "numpy": loss.detach().numpy()
    if kind == "cpu": loss.detach().cpu()
    if kind == "helper": remember(loss)
    if kind == "if":
        if loss > 0: pass
    if kind == "mask": out[out > 0]
    if kind == "nonzero": (y > 3).nonzero()
    if kind == "one_hot_sized": F.one_hot(y)
    if kind == "one_hot_bounded": F.one_hot(y, num_classes=4)
    if kind == "bincount": torch.bincount(y, minlength=4)
    if kind == "sync": torch.cuda.synchronize()
    if kind == "kept": loss.detach() * 2
    if kind == "evade":
        from torch.utils._python_dispatch import _disable_current_modes
        with _disable_current_modes():
            loss.item()
    return loss
"""
LINES = {
    line.split("==")[1].split(":")[0].strip().strip('"'): n
    for n, line in enumerate(LEARNER.splitlines(), 1)
    if 'kind == "' in line
}
LINES["helper"] = 6  # the .item() inside the helper, not the call
LINES["if"] += 1

DRIVER = """\
import importlib.util, json, sys, torch
from grader.worker import census, tracing
path = sys.argv[1]
rec = tracing.Recorder(path, "cpu"); rec.install()
counts = census.Census(rec, "cpu"); counts.install()
spec = importlib.util.spec_from_file_location("learner", path)
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8), torch.nn.Linear(8, 4))
names = {id(m): (n or "model") for n, m in model.named_modules()}
x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
out = {}
for kind in sys.argv[2:]:
    mode = counts.start([model], names)
    try:
        with mode:
            module.step(model, x, y, kind)
        error = None
    except Exception as exc:
        error = type(exc).__name__
    out[kind] = {"events": counts.stop(), "tampered": counts.tampered(), "error": error}
print(json.dumps(out))
"""
KINDS = [
    "none",
    "item",
    "float",
    "fstring",
    "print",
    "tolist",
    "numpy",
    "cpu",
    "helper",
    "if",
    "mask",
    "nonzero",
    "one_hot_sized",
    "one_hot_bounded",
    "bincount",
    "sync",
    "kept",
    "evade",
]


@pytest.fixture(scope="module")
def census_of(tmp_path_factory):
    """Each kind of step, counted by a census in one process of its own (the recorder patches torch)."""
    root = tmp_path_factory.mktemp("census")
    (root / "learner.py").write_text(LEARNER)
    (root / "driver.py").write_text(DRIVER)
    done = subprocess.run(
        [sys.executable, str(root / "driver.py"), str(root / "learner.py"), *KINDS],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=runner.__file__.rsplit("/grader/", 1)[0],
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


SPELLINGS = {
    "item": "value",
    "float": "value",
    "fstring": "value",
    "if": "value",
    "helper": "value",
    "print": "print",
    "tolist": "host_read",
    "numpy": "host_read",
    "cpu": "to_host",
    "mask": "data_dependent",
    "nonzero": "data_dependent",
    "bincount": "op_value",
    "sync": "explicit",
}


@pytest.mark.parametrize("kind", sorted(SPELLINGS))
def test_every_spelling_of_a_host_read_is_one_sync_at_the_learners_line(kind, census_of):
    syncs = [e for e in census_of[kind]["events"] if e["ev"] == "sync"]
    assert [(e["kind"], e["line"], e["n"]) for e in syncs] == [(SPELLINGS[kind], LINES[kind], 1)], census_of[kind]


def test_a_copy_to_the_host_counts_on_a_cpu_as_the_sync_it_is_on_a_gpu(census_of):
    """On a CPU `.cpu()` returns the tensor itself and dispatches nothing; on a GPU it waits for the device."""
    syncs = [e for e in census_of["cpu"]["events"] if e["ev"] == "sync"]
    assert [(e["kind"], e["op"]) for e in syncs] == [("to_host", "tensor.cpu")]


def test_an_op_that_needs_a_value_syncs_and_an_op_that_checks_its_arguments_on_a_cpu_alone_does_not(census_of):
    """F.one_hot reads the largest class to size its output on every device; given num_classes, only a CPU kernel
    reads the classes (to check their bounds; a GPU asserts on the device and never waits)."""
    sized = {(e["kind"], e["line"]) for e in census_of["one_hot_sized"]["events"] if e["ev"] == "sync"}
    assert sized == {("op_value", LINES["one_hot_sized"])}, census_of["one_hot_sized"]
    bounded = census_of["one_hot_bounded"]
    assert not [e for e in bounded["events"] if e["ev"] == "sync"], bounded
    assert bounded["error"] is None and bounded["tampered"] == []


def test_a_step_that_keeps_values_on_the_device_has_no_sync(census_of):
    for kind in ("none", "kept"):
        assert not [e for e in census_of[kind]["events"] if e["ev"] == "sync"], census_of[kind]


def test_the_graders_own_value_reads_are_not_the_learners_syncs(census_of):
    """The recorder notes each backward's loss value with float(); that read is the grader's."""
    assert census_of["none"]["error"] is None and census_of["none"]["tampered"] == []


def test_forward_matmuls_are_counted_with_dtype_layer_and_autocast_state(census_of):
    matmuls = sorted(
        (e["module"], e["dtype"], e["autocast"], e["line"]) for e in census_of["none"]["events"] if e["ev"] == "matmul"
    )
    assert matmuls == [("0", "bfloat16", "on", 11), ("1", "float32", "off", 13), ("2", "float32", "none", 14)]


def test_turning_the_census_off_from_the_step_is_tampering(census_of):
    assert census_of["evade"]["tampered"] == ["torch.utils._python_dispatch._disable_current_modes"]
    assert census_of["print"]["tampered"] == []  # printing turns modes off inside PyTorch: not the learner's doing


def test_explicit_synchronize_is_counted_before_it_runs(census_of):
    assert census_of["sync"]["error"] is not None  # a CPU build has no CUDA to synchronize with


# -- the answer -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source,names",
    [
        ('BOTTLENECKS = {"host_sync", "float32_matmul"}', ["float32_matmul", "host_sync"]),
        ('BOTTLENECKS = ["host_sync"]', ["host_sync"]),
        ('BOTTLENECKS = ("host_sync",)', ["host_sync"]),
        ('BOTTLENECKS = set(["host_sync"])', ["host_sync"]),
        ("BOTTLENECKS = set()", []),
        ('BOTTLENECKS: set = {"host_device_copy"}', ["host_device_copy"]),
        ('BOTTLENECKS = "host_sync"', ["host_sync"]),
        ('BOTTLENECKS = set()\nBOTTLENECKS = {"host_sync"}', ["host_sync"]),
        ('BOTTLENECKS = {"Host sync": "line 22", "float32-matmul": "line 17"}', ["float32_matmul", "host_sync"]),
    ],
)
def test_the_answer_is_read_from_the_source_as_written(source, names):
    assert profiling.answer(source, "BOTTLENECKS")[::2] == (names, None)


@pytest.mark.parametrize(
    "source,problem",
    [
        ("x = 1", "bottleneck_no_answer"),
        ("def f():\n    BOTTLENECKS = {'host_sync'}", "bottleneck_no_answer"),
        ("BOTTLENECKS = find_them()", "bottleneck_not_literal"),
        ("BOTTLENECKS = {'host_sync'} | {'x'}", "bottleneck_not_literal"),
        ("BOTTLENECKS = {1, 2}", "bottleneck_not_literal"),
        ("BOTTLENECKS = (", "bottleneck_no_answer"),
    ],
)
def test_an_answer_that_is_not_written_out_is_named(source, problem):
    assert profiling.answer(source, "BOTTLENECKS")[2] == problem


# -- the checks over census data --------------------------------------------------------------------------------


def sync(line, n=1, kind="value"):
    return {"ev": "sync", "kind": kind, "op": "aten::_local_scalar_dense", "line": line, "n": n}


def matmul(dtype, autocast="on", module="mixer.0", line=9):
    return {
        "ev": "matmul",
        "op": "aten::addmm",
        "dtype": dtype,
        "module": module,
        "autocast": autocast,
        "line": line,
        "n": 1,
    }


def copy(line, direction="h2d"):
    return {"ev": "copy", "dir": direction, "op": "torch.tensor", "line": line, "n": 1, "bytes": 32}


def steps(*events_per_step):
    return [{"step": i, "events": list(events)} for i, events in enumerate(events_per_step)]


GIVEN = steps(
    *[[sync(22), matmul("float32", "off", line=17), matmul("bfloat16", module="encoder.0", line=16), copy(13)]] * 4
)


def evidence(census, device="cpu", source='BOTTLENECKS = {"host_sync", "float32_matmul"}', **kw):
    return profiling.ProfileEvidence(source, device, "bfloat16", census, GIVEN, **kw)


def test_the_first_step_may_build_what_later_steps_reuse():
    warm_up = steps([copy(5), sync(7), matmul("bfloat16")], [matmul("bfloat16")], [matmul("bfloat16")])
    assert profiling.host_syncs(HostSyncsCheck(id="host_syncs"), evidence(warm_up)).status == "pass"
    assert profiling.transfers(TransfersCheck(id="transfers"), evidence(warm_up, "cuda")).status == "pass"


def test_a_sync_every_other_step_is_still_a_sync():
    every_other = steps([matmul("bfloat16")], [sync(7)], [matmul("bfloat16")], [sync(7)])
    result = profiling.host_syncs(HostSyncsCheck(id="host_syncs"), evidence(every_other))
    assert result.status == "fail" and [(f.id, f.line) for f in result.findings] == [("host_sync_value", 7)]
    assert result.measured["per_step"] == 1 and result.measured["given_per_step"] == 1


def test_copies_are_only_judged_where_a_device_exists():
    spec = TransfersCheck(id="transfers")
    assert profiling.inapplicable(spec, "cpu").status == "not_applicable"
    assert "not applicable here" in profiling.inapplicable(spec, "cpu").message
    result = profiling.transfers(spec, evidence(steps([copy(5)], [copy(5)]), "cuda"))
    assert result.status == "fail" and result.findings[0].id == "copy_to_device" and result.findings[0].line == 5


def test_the_answer_is_judged_on_what_this_device_can_show():
    spec = BottleneckCheck(id="bottleneck")
    cpu = profiling.bottleneck(spec, evidence([], source='BOTTLENECKS = {"host_sync", "float32_matmul"}'))
    assert cpu.status == "pass" and cpu.threshold["judged"] == ["host_sync", "float32_matmul"]
    cuda = profiling.bottleneck(spec, evidence([], "cuda", source='BOTTLENECKS = {"host_sync", "float32_matmul"}'))
    assert cuda.status == "fail" and [f.id for f in cuda.findings] == ["bottleneck_missed"]
    assert "host_device_copy" in cuda.findings[0].message and "line 13" in cuda.findings[0].message
    noted = profiling.bottleneck(
        spec, evidence([], source='BOTTLENECKS = ["host_sync", "float32_matmul", "host_device_copy"]')
    )
    assert noted.status == "pass" and [(f.id, f.severity) for f in noted.findings] == [("bottleneck_unjudged", "info")]


def test_naming_what_the_profile_does_not_show_fails():
    result = profiling.bottleneck(
        BottleneckCheck(id="bottleneck"),
        profiling.ProfileEvidence(
            'BOTTLENECKS = {"host_sync", "float32_matmul"}', "cpu", "bfloat16", [], steps([sync(3)], [sync(3)])
        ),
    )
    assert result.status == "fail" and [f.id for f in result.findings] == ["bottleneck_not_in_profile"]


def test_each_float32_matmul_is_named_by_why_autocast_did_not_apply():
    census = steps(
        *[
            [
                matmul("float32", "off", line=17),
                matmul("float32", "none", module="head", line=18),
                matmul("bfloat16", module="encoder.0", line=16),
            ]
        ]
        * 3
    )
    result = profiling.matmul_dtypes(MatmulDtypesCheck(id="matmul_dtypes"), evidence(census))
    assert result.status == "fail"
    assert [(f.id, f.line) for f in result.findings] == [
        ("float32_autocast_disabled", 17),
        ("float32_outside_autocast", 18),
    ]
    assert result.measured["float32_per_step"] == 2


def weights(shift: float) -> dict:
    torch.manual_seed(1)
    return {"w": torch.randn(64, 64) + shift}


def test_a_clean_count_with_the_given_steps_numbers_fails():
    """A census that reports every matmul in 16-bit while the weights trained like the given step's float32
    layers: the numbers decide."""
    start, given, ref = {"w": torch.zeros(64, 64)}, weights(1.0), weights(1.02)
    clean = steps(*[[matmul("bfloat16")]] * 3)
    spec = MatmulDtypesCheck(id="matmul_dtypes")
    forged = profiling.matmul_dtypes(
        spec, evidence(clean, params=given, given_params=given, reference_params=ref, start=start)
    )
    assert forged.status == "fail" and forged.findings[0].id == "numbers_of_given_step"
    real = profiling.matmul_dtypes(
        spec, evidence(clean, params=weights(1.019), given_params=given, reference_params=ref, start=start)
    )
    assert real.status == "pass" and real.measured["toward_reference"] > 0.9


def test_a_step_with_no_matmul_seen_cannot_pass():
    result = profiling.matmul_dtypes(MatmulDtypesCheck(id="matmul_dtypes"), evidence(steps([], [])))
    assert result.status == "error"


# -- what the grading process accepts from a worker ------------------------------------------------------------


def test_census_replies_are_rebuilt_field_by_field():
    reply = [{"step": 1, "events": [{**sync(4), "extra": "x" * 10_000}, copy(5)]}]
    assert protocol._census(reply) == [{"step": 1, "events": [sync(4), copy(5)]}]


@pytest.mark.parametrize(
    "events",
    [
        [{"ev": "sync", "kind": "value", "op": "x", "line": 1, "n": -1}],
        [{"ev": "sync", "kind": "value", "op": "x", "line": "1", "n": 1}],
        [{"ev": "matmul", "op": "x", "dtype": 3, "module": "", "autocast": "on", "line": 1, "n": 1}],
        [{"ev": "mystery", "line": 1, "n": 1}],
        [sync(1)] * (census.MAX_EVENTS + 1),
    ],
)
def test_malformed_census_replies_are_the_workers_fault(events):
    with pytest.raises((KeyError, TypeError, ValueError)):
        protocol._census([{"step": 0, "events": events}])


def test_a_plot_carries_the_given_steps_profile_beside_the_fixed_steps_counts():
    fixed = steps(*[[matmul("bfloat16")]] * 3)
    data = profiling.plot(fixed, GIVEN, [{"op": "aten::addmm", "calls": 3}], "cpu")
    assert data["given"]["per_step"] == {"host_sync": 1, "float32_matmul": 1, "host_device_copy": None}
    assert data["submission"]["per_step"]["float32_matmul"] == 0 and data["given"]["top_ops"][0]["calls"] == 3
    json.dumps(data)

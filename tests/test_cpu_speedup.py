"""Speedup graded on CPUs whose 16-bit matmuls are fast: which CPU counts as one is what oneDNN runs (its
verbose log), the lessons' `cpu_amx` workloads and thresholds, and a CPU timing that weighs each submission's
times by the cores it kept busy. The suite caps oneDNN at AVX2 for every other test; the tests here that need a
fast CPU lift the cap, and say "not applicable" where the CPU has no AMX."""

import os

import pytest
from conftest import FIXTURES, TEST_LIMITS

from grader import runner
from grader.judge import devices
from grader.judge.timing import TimingResult, estimate
from grader.lesson.check_specs import threshold_for
from grader.lesson.loader import load_exercise_file
from grader.sandboxes.launcher import LocalLauncher
from grader.wording.catalog import value_in

AMX_LOG = (
    "onednn_verbose,v1,info,cpu,isa:Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support\n"
    "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 dst:bf16::blocked:ab::f0"
    ",,,256x256,0.01\n"
    "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx10_1_512_amx,undef,src:bf16::blocked:ab::f0 "
    "wei:bf16::blocked:ba::f0 dst:bf16::blocked:ab::f0,attr-scratchpad:user,,256x256:256x256,0.26\n"
)
AVX512_BF16_LOG = (
    "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_bf16,undef,src:bf16::blocked:ab::f0 "
    "wei:bf16::blocked:ba::f0 dst:bf16::blocked:ab::f0,,,256x256:256x256,0.22\n"
)
FP32_ONLY_LOG = "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx2,undef,src:f32::blocked:ab::f0,,,8x8,0.1\n"


def test_the_kernel_is_read_from_onednns_log_of_a_16bit_matmul():
    assert devices.parse_kernel(AMX_LOG) == "brg_matmul:avx10_1_512_amx"
    assert devices.parse_kernel(AVX512_BF16_LOG) == "brg_matmul:avx512_core_bf16"
    assert devices.parse_kernel(FP32_ONLY_LOG) is None  # a float32 matmul says nothing of 16-bit ones
    assert devices.parse_kernel("") is None


def test_only_an_amx_kernel_makes_a_fast_cpu():
    assert devices.MatmulKernel("bfloat16", "brg_matmul:avx10_1_512_amx", None).fast
    assert not devices.MatmulKernel("bfloat16", "brg_matmul:avx512_core_bf16", None).fast
    assert not devices.MatmulKernel("bfloat16", None, "AVX2").fast


def test_a_slow_cpu_says_why_in_the_learners_language():
    capped = devices.MatmulKernel("bfloat16", None, "AVX2").why_not_fast()
    assert "ONEDNN_MAX_CPU_ISA=AVX2" in value_in(capped, "en") and "emula" in value_in(capped, "it")
    vector = devices.MatmulKernel("bfloat16", "brg_matmul:avx512_core_bf16", None).why_not_fast()
    assert "brg_matmul:avx512_core_bf16" in value_in(vector, "id") and "without AMX" in value_in(vector, "en")
    assert "AMX" in value_in(devices.MatmulKernel("float16", None, None, no_amx=True).why_not_fast(), "en")


def test_a_fast_cpu_falls_back_to_a_plain_cpu_threshold_and_a_plain_cpu_never_takes_the_fast_one():
    assert threshold_for({"cpu_amx": 1.3, "cuda": 2.0}, "cpu_amx") == 1.3
    assert threshold_for({"cpu": 1.1}, "cpu_amx") == 1.1
    assert threshold_for({"cpu_amx": 1.3}, "cpu") is None
    assert threshold_for({"cpu_amx": 1.3, "cuda": 2.0}, "cuda") == 2.0


def test_the_cpu_amx_workload_applies_only_on_a_fast_cpu(exercises):
    wl = exercises["autocast"].workload
    assert wl.for_device("cpu_amx").model.hidden == wl.cpu_amx.model.hidden != wl.for_device("cpu").model.hidden
    assert wl.for_device("cuda").model.hidden == wl.cuda.model.hidden


def test_lessons_timed_on_fast_cpus(exercises):
    timed = {i for i, ex in exercises.items() if (s := ex.check("speedup")) and "cpu_amx" in s.min_speedup}
    assert {"autocast", "transformer_block", "grad_scaler"} <= timed
    assert all(exercises[i].workload.cpu_amx is not None for i in timed)


def test_a_capped_onednn_is_a_slow_cpu_whatever_the_chip(monkeypatch):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    kernel = devices.cpu_matmul_kernel("bfloat16")
    assert not kernel.fast and devices.speed_kind("cpu", "bfloat16") == "cpu"


@pytest.fixture
def native(monkeypatch):
    """This CPU as it is: the suite's cap lifted for the workers of these tests."""
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    return devices.cpu_matmul_kernel("bfloat16")


@pytest.fixture(scope="module")
def launcher():
    return LocalLauncher(TEST_LIMITS)


def test_the_reference_passes_and_the_fp32_baseline_fails_speedup_where_the_cpu_is_fast(native, exercises, launcher):
    ex = exercises["autocast"]
    ref = runner.run(ex, ex.reference, device="cpu", launcher=launcher).check("speedup")
    base = runner.run(ex, ex.baseline, device="cpu", launcher=launcher).check("speedup")
    if not native.fast:
        for check in (ref, base):
            assert check.status == "not_applicable", check
            assert value_in(native.why_not_fast(), "en") in check.message
        pytest.skip(
            f"not a fast CPU here ({value_in(native.why_not_fast(), 'en')}): both are not applicable, as checked"
        )
    assert ref.status == "pass" and ref.measured["ci95_low"] >= 1.3, ref
    assert base.status == "fail" and base.measured["ci95_high"] < 1.3, base


def test_the_suites_capped_cpu_says_not_applicable_and_why(monkeypatch, exercises, launcher):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    check = runner.run(exercises["autocast"], exercises["autocast"].baseline, device="cpu", launcher=launcher)
    speed = check.check("speedup")
    assert speed.status == "not_applicable"
    assert "ONEDNN_MAX_CPU_ISA=AVX2" in speed.message or "no AMX" in speed.message


# Prepended to the timed fixture's reference: the same step, with a second core kept busy beside it
HELPER_THREAD = """
import threading

import torch

torch.set_num_threads(1)


def _helper():
    a = torch.randn(512, 512)
    while True:
        a = torch.tanh(a @ a)  # milliseconds in C++ without the GIL: a second core kept busy beside every step


threading.Thread(target=_helper, daemon=True).start()
"""


def test_the_speedup_is_per_core_used():
    """Weighed by the cores each side kept busy: two cores for half the time is no faster than one."""
    timing = TimingResult(baseline_s=[1.0, 1.0], submission_s=[0.5, 0.5], steps_per_block=1)
    timing.estimate = estimate(timing.baseline_s, timing.submission_s)
    timing.cpu_s = {"baseline": 2.0, "submission": 2.0}  # the submission kept 2 cores busy for 1 s
    assert timing.cores("submission") == pytest.approx(2.0) and timing.cores("baseline") == pytest.approx(1.0)
    assert timing.estimate.ratio == pytest.approx(2.0) and timing.per_core().ratio == pytest.approx(1.0)
    timing.cpu_s = {"baseline": 2.0, "submission": None}  # not seen: the measured estimate as it is
    assert timing.per_core().ratio == pytest.approx(2.0)
    cuda = TimingResult(baseline_s=[1.0], submission_s=[0.5], cpu_s={"baseline": 1.0, "submission": 2.0}, device="cuda")
    assert cuda.cores("submission") is None  # the host's cores say nothing of a GPU's work


def _second_core_free() -> bool:
    """Whether two threads computing get two cores here now (not on one core, nor on a machine that another
    test run keeps busy): the grader can only measure a second busy core that the machine gives."""
    import threading
    import time

    import torch

    def work():
        a = torch.randn(384, 384)
        for _ in range(40):
            a = torch.tanh(a @ a)  # long enough in C++, without the GIL, for the two to overlap

    threads_before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        start_cpu, start = time.process_time(), time.perf_counter()
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return (time.process_time() - start_cpu) / (time.perf_counter() - start) > 1.6
    finally:
        torch.set_num_threads(threads_before)


def test_a_second_busy_core_is_weighed_into_the_speedup(launcher):
    """The timed fixture's baseline sleeps, so its reference is fast on any CPU; the same step with a helper
    thread computing beside it keeps two cores busy, and its speedup is divided by them."""
    if len(os.sched_getaffinity(0)) < 2 or not _second_core_free():
        pytest.skip("no second core free here now: the per-core weighing is tested above on given times")
    timed = load_exercise_file(FIXTURES / "exercises" / "timed.yaml")
    plain = runner.run(timed, timed.reference, device="cpu", launcher=launcher).check("speedup")
    helped = runner.run(timed, HELPER_THREAD + timed.reference, device="cpu", launcher=launcher).check("speedup")
    assert plain.measured["cores"] < 1.2, plain
    if helped.measured["cores"] <= 1.2 and not _second_core_free():
        pytest.skip("the second core was taken while the test ran (another test run's load)")
    assert helped.measured["cores"] > 1.2, helped
    assert helped.measured["speedup"] < plain.measured["speedup"] / 1.15, (plain, helped)

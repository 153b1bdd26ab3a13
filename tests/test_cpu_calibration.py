"""bench/cpu_calibration.py: what counts as a flip, and the run on a CPU that is not fast (the suite's cap)."""

from types import SimpleNamespace

from bench import cpu_calibration
from grader.judge import devices


def _result(status, **measured):
    check = SimpleNamespace(status=status, measured=measured, message=f"speedup {status}")
    return SimpleNamespace(check=lambda _id: check, duration_s=1.0)


def test_a_flip_is_a_reference_that_does_not_pass_or_a_baseline_that_does():
    ref = cpu_calibration.row("l", "reference", "alone", [_result("pass", speedup=2.0), _result("fail", speedup=1.2)])
    base = cpu_calibration.row("l", "FP32 baseline", "alone", [_result("fail", speedup=1.0), _result("error")])
    assert ref["flips"] == 1 and base["flips"] == 0
    assert cpu_calibration.row("l", "FP32 baseline", "alone", [_result("pass", speedup=1.4)])["flips"] == 1


def test_a_cpu_that_is_not_fast_says_not_applicable_and_why(monkeypatch, tmp_path):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    out = tmp_path / "cpu-calibration.md"
    code = cpu_calibration.main(["--repeats", "1", "--lessons", "autocast", "--sandbox", "local", "--output", str(out)])
    table = out.read_text()
    assert code == 0, table
    # the reason the grader's own probe gives on this CPU: no AMX at all (an AVX2-only or avx512_bf16 EPYC), or
    # an AMX CPU held to AVX2 by the cap
    why = "no AMX" if devices.cpu_matmul_kernel("bfloat16").no_amx else "ONEDNN_MAX_CPU_ISA=AVX2"
    assert table.count("not_applicable 1/1") == 4 and why in table, table

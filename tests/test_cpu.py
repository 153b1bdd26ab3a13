"""`grader selftest` says whether this CPU runs bfloat16 natively, since an AVX2-only one emulates it and
gradings take 10-20x longer there."""

from grader.judge.devices import bf16_support

EPYC_AVX2 = "model name\t: AMD EPYC 7B12\nflags\t\t: fpu avx avx2 fma\n"
EPYC_BF16 = "model name\t: AMD EPYC 9B14\nflags\t\t: fpu avx2 avx512f avx512_bf16\n"


def test_avx2_only_cpu_is_reported_as_emulating_bfloat16(monkeypatch):
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    support = bf16_support(EPYC_AVX2)
    assert not support.native
    assert "AMD EPYC 7B12" in support.describe() and "EMULATED" in support.describe()


def test_native_bfloat16_is_reported_unless_onednn_is_capped(monkeypatch):
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert bf16_support(EPYC_BF16).native
    assert "natively" in bf16_support(EPYC_BF16).describe()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    capped = bf16_support(EPYC_BF16)
    assert not capped.native and "ONEDNN_MAX_CPU_ISA=AVX2" in capped.describe()

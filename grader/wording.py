"""A check's measured values against its thresholds, in words a learner reads
("update vs FP32 0.43%, needs at most 5.00%"), instead of the result
document's keys. The terminal report uses it; it is the one place to word
these figures."""

from __future__ import annotations

from grader.results import CheckResult


def pct(value: float) -> str:
    return f"{value:.2%}" if abs(value) < 0.1 else f"{value:.1%}"


def size(n: float) -> str:
    return f"{n / 2**20:.1f} MiB" if abs(n) >= 102400 else f"{n / 1024:.1f} KiB"


def measured_in_words(check: CheckResult) -> list[str]:
    m, t = check.measured, check.threshold or {}
    out = []
    if check.id == "parity" and "max_loss_rel_diff" in m:
        out.append(f"loss vs FP32 {pct(m['max_loss_rel_diff'])} (step {m.get('at_step')}), needs at most "
                   f"{pct(t['loss_rtol'])}")
        if m.get("max_update_rel_diff") is not None:
            out.append(f"update vs FP32 {pct(m['max_update_rel_diff'])} (worst: {m.get('worst_param')}), needs at "
                       f"most {pct(t['update_rtol'])}")
    elif check.id == "coverage" and "fraction_16bit" in m:
        out.append(f"matmul FLOPs in 16-bit {pct(m['fraction_16bit'])}, needs at least {pct(t['min_fraction'])}")
        if "distance_toward_amp" in m and m.get("distance_to_fp32", 1) <= m.get("distance_near", 0):
            out.append(f"weights moved {pct(m['distance_toward_amp'])} of the way from the FP32 run toward a "
                       "mixed-precision run (about 100% when the 16-bit work is real)")
    elif check.id == "memory" and "ratio" in m:
        out.append(f"peak memory {size(m['peak_bytes'])}, {pct(m['ratio'])} of the FP32 baseline's, needs at most "
                   f"{pct(t['max_ratio'])}")
        if m.get("retained_bytes_per_step"):
            out.append(f"kept alive after each step: at most {size(max(m['retained_bytes_per_step']))}")
    elif check.id == "overflow" and "params_changed" in m:
        out.append(f"overflowed step {m['step']}: {m['params_changed']} weight tensors changed (needs 0), scale "
                   f"{m['scale_before']:g} -> {m['scale_after']:g} (needs to drop)")
    elif check.id == "speedup" and "speedup" in m:
        out.append(f"speedup {m['speedup']:.2f}x (95% interval {m['ci95_low']:.2f}x to {m['ci95_high']:.2f}x over "
                   f"{m['rounds']} rounds), needs a lower bound of at least {t['min_speedup']:.2f}x")
    return out

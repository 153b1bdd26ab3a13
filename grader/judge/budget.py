"""The wall-clock budget of a whole grading. Each request to the learner's process has its own limit (init 120 s,
a step 60 s), generous because a slow CPU or a cold GPU must never fail a right answer; but a submission that waits
just under each of them would hold a grading slot for minutes and still pass. The budget bounds the sum: it is
derived from what the trusted runs of the same lesson took on this machine (the hidden reference, which does the
same 16-bit work as a right answer, else the FP32 baseline times the slowest emulation of 16-bit matmuls a CPU
shows), so it scales with the lesson and the hardware rather than being one number for every lesson."""

from __future__ import annotations

# On CPUs without native bfloat16, autocast runs 10-20x slower than float32 on matmul-bound steps; where only
# the FP32 baseline was timed, a right answer may take this much longer than it (shared/platform-notes.md).
EMULATED_16BIT = 20.0
TIMING_SLACK = 1.5  # timing rounds stop after their own budget_s; the round under way when it ends still finishes
# A trusted run that compiles spends most of its time in the compiler (inductor's C++ compiles: 35-40 s of a
# 40 s run on a quiet 2-core host, 150 s and more under load). Scaled by budget_factor with the steps, that time
# let a submission that never compiles sleep for minutes and pass. So the compile is budgeted apart, once more
# than it took (a learner compiling the same model compiles about as much), and the factor scales only the
# reference's compute: a submission is bounded by the work it must do, not by a compiler it need not run.
COMPILE_FACTOR = 2.0


def derived(
    limits,
    trusted_s: dict[str, float | None],
    timing_budgets_s: list[float],
    cap_s: float | None = None,
    compile_s: dict[str, float] | None = None,
) -> float | None:
    """Seconds the learner's process may take from loading its code to its last reply, or None while no trusted
    run has been timed yet (the per-request limits then hold alone). `trusted_s` is each trusted role's measured
    time over the same work (load, compared steps, parameters), `compile_s` the part of it its backend spent
    compiling; `timing_budgets_s` the budgets of the timed phases this grading runs; `cap_s` a lesson's own,
    stricter cap."""
    compile_s = compile_s or {}

    def split(role: str) -> tuple[float, float]:  # (compute, compile) of one trusted run
        spent = min(compile_s.get(role) or 0.0, trusted_s[role])
        return trusted_s[role] - spent, spent

    same_work = [split(role) for role, s in trusted_s.items() if role != "baseline" and s]
    if same_work:
        compute, compiling = max(c for c, _ in same_work), max(c for _, c in same_work)
    elif trusted_s.get("baseline"):
        compute, compiling = split("baseline")
        compute *= EMULATED_16BIT
    else:
        return cap_s
    seconds = (
        limits.budget_floor_s
        + limits.budget_factor * compute
        + COMPILE_FACTOR * compiling
        + TIMING_SLACK * sum(timing_budgets_s)
    )
    return min(seconds, cap_s) if cap_s else seconds


def compile_seconds(data) -> float:
    """What a trusted run's backends spent compiling (grader/worker/compiling.py), from its per-step counts."""
    return sum(c.get("compile_ms", 0) for c in data.compiled) / 1000

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


def derived(
    limits, trusted_s: dict[str, float | None], timing_budgets_s: list[float], cap_s: float | None = None
) -> float | None:
    """Seconds the learner's process may take from loading its code to its last reply, or None while no trusted
    run has been timed yet (the per-request limits then hold alone). `trusted_s` is each trusted role's measured
    time over the same work (load, compared steps, parameters); `timing_budgets_s` the budgets of the timed
    phases this grading runs; `cap_s` a lesson's own, stricter cap."""
    same_work = [s for role, s in trusted_s.items() if role != "baseline" and s]
    if same_work:
        reference = max(same_work)
    elif trusted_s.get("baseline"):
        reference = trusted_s["baseline"] * EMULATED_16BIT
    else:
        return cap_s
    seconds = limits.budget_floor_s + limits.budget_factor * reference + TIMING_SLACK * sum(timing_budgets_s)
    return min(seconds, cap_s) if cap_s else seconds

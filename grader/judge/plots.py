"""The plots of a grading (losses beside the FP32 baseline's, the scale, timing
rounds) as plain lists for the web app and the notebook: JSON has no NaN, so a
missing value is None."""

from __future__ import annotations

import math

from grader.checks import memory
from grader.judge.drive import RunData


def _plotted(values: list[float]) -> list[float | None]:
    return [v if math.isfinite(v) else None for v in values]


def plots(sub: RunData, base: RunData, timing) -> dict:
    data = {"loss": {"submission": _plotted(sub.losses), "baseline": _plotted(base.losses)}}
    if sub.scales:
        data["scale"] = sub.scales
    o = sub.overflow
    if o is not None and o["scale_after"] is not None:  # the step the grader made overflow, and its scale after
        data["scale_overflow"] = {"step": o["step"], "scale": o["scale_after"]}
    if sub.memory and base.memory:
        data["memory"] = {
            "submission_bytes": memory.whole_run_peak(sub.memory),
            "baseline_bytes": memory.whole_run_peak(base.memory),
        }
    if timing is not None:
        data["timing"] = {
            "baseline_s": timing.baseline_s,
            "submission_s": timing.submission_s,
            "steps_per_block": timing.steps_per_block,
        }
    return data

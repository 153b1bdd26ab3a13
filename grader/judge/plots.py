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
    # the steps the grader made overflow, each with its scale after; `scale_overflow`, the first, for older readers
    forced = [{"step": o["step"], "scale": o["scale_after"]} for o in sub.overflows if o["scale_after"] is not None]
    if forced:
        data["scale_overflows"] = forced
        data["scale_overflow"] = forced[0]
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

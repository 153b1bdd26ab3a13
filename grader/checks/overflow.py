"""What the GradScaler does when a step overflows, observed from outside.
After the compared steps the grader runs one more step in which every
parameter's gradient gets an inf, as a float16 backward that overflows
would give. A correct step (scaler.step, then scaler.update) leaves every
weight exactly as it was and backs the scale off. The grader compares the
weights it loaded before and after, and reads the scale itself: a trace can
be faked, skipped steps and a smaller scale cannot without doing the work."""

from __future__ import annotations

import math

import torch

from grader.messages import finding, say
from grader.results import FAIL, PASS, CheckResult


def changed(before: dict, after: dict) -> list[str]:
    return [k for k, v in before.items() if k not in after or after[k].shape != v.shape
            or not torch.equal(after[k], v)]


def check(spec, step: int, before: dict, after: dict, scale_before: float | None,
          scale_after: float | None) -> CheckResult:
    moved = changed(before, after)
    nan = [k for k in moved if k in after and not bool(torch.isfinite(after[k]).all())]
    measured = {"step": step, "params_changed": len(moved), "params_nonfinite": len(nan),
                "scale_before": scale_before, "scale_after": scale_after}
    findings = []
    said = []
    if moved:
        key = "overflow_step_applied.nonfinite" if nan else "overflow_step_applied"
        said.append(say(key, step=step, n=len(moved)))
    if scale_before is None or scale_after is None or not math.isfinite(scale_after):
        said.append(say("scale_unknown"))
    elif not scale_after < scale_before:
        said.append(say("scale_not_backed_off", scale=scale_after))
    if said:
        findings = [finding(s.key.split(".")[0], key=s.key, **s.params) for s in said]
        return CheckResult("overflow", FAIL, say("overflow.fail", findings=said), measured, None, findings,
                           weight=spec.weight)
    return CheckResult("overflow", PASS, say("overflow.pass", step=step, before=scale_before, after=scale_after),
                       measured, None, weight=spec.weight)

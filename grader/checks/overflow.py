"""What the GradScaler does when a step overflows, observed from outside.
On one step inside the graded window every parameter's gradient gets an inf,
as a float16 backward that overflows would give, in the submission's run and
in the trusted ones (the FP32 baseline, which has no scaler, is put back as a
skipped step leaves it). A correct step (scaler.step, then scaler.update)
leaves every weight exactly as it was and backs the scale off; the steps after
it train again, which parity judges against runs that went through the same
overflow. The grader compares the weights it loaded before and after, and
reads the scale itself: a trace can be faked, skipped steps and a smaller
scale cannot without doing the work."""

from __future__ import annotations

import math

import torch

from grader.results import FAIL, PASS, CheckResult, finding, message_of
from grader.wording.catalog import say


def changed(before: dict, after: dict) -> list[str]:
    return [k for k, v in before.items() if k not in after or after[k].shape != v.shape or not torch.equal(after[k], v)]


def check(spec, o: dict, final: dict, steps: int) -> CheckResult:
    """`o` is the submission's overflowed step (runner.drive): its weights and scale before and after, or the
    error it raised; `final` the weights after the last of the `steps` compared steps."""
    step = o["step"]
    if o.get("error"):
        return _raised(spec, step, o["error"])
    moved = changed(o["before"], o["after"])
    nan = [k for k in moved if k in o["after"] and not bool(torch.isfinite(o["after"][k]).all())]
    scale_before, scale_after = o["scale_before"], o["scale_after"]
    measured = {
        "step": step,
        "params_changed": len(moved),
        "params_nonfinite": len(nan),
        "scale_before": scale_before,
        "scale_after": scale_after,
    }
    said = []
    if moved:
        key = "overflow_step_applied.nonfinite" if nan else "overflow_step_applied"
        said.append(say(key, step=step, n=len(moved)))
    if scale_before is None or scale_after is None or not math.isfinite(scale_after):
        said.append(say("scale_unknown"))
    elif not scale_after < scale_before:
        said.append(say("scale_not_backed_off", scale=scale_after))
    if not moved and step < steps - 1 and not changed(o["after"], final):
        said.append(say("not_recovered", step=step, later=steps - 1 - step))
    if said:
        findings = [finding(s.key.split(".")[0], key=s.key, **s.params) for s in said]
        return CheckResult(
            "overflow", FAIL, say("overflow.fail", findings=said), measured, None, findings, weight=spec.weight
        )
    return CheckResult(
        "overflow",
        PASS,
        say("overflow.pass", step=step, before=scale_before, after=scale_after),
        measured,
        None,
        weight=spec.weight,
    )


def _raised(spec, step: int, error: dict) -> CheckResult:
    """The code raised on the step the grader made overflow: that is this check's finding (the other checks
    judge the steps before it), at the learner's line."""
    detail = str(error.get("message") or "an exception")[:500]
    rank = error.get("rank")
    key = "overflow_step_raised" if rank is None else "overflow_step_raised.rank"
    f = finding("overflow_step_raised", error.get("line"), key=key, step=step, detail=detail, rank=rank)
    return CheckResult(
        "overflow",
        FAIL,
        say("overflow.fail", findings=[message_of(f)]),
        {"step": step, "raised": True},
        None,
        [f],
        weight=spec.weight,
    )

"""What the GradScaler does when a step overflows, observed from outside.
On one step inside the graded window one gradient of each optimizer gets an
inf (grader/worker/forced_overflow.py), as a float16 backward that overflows would give, in the submission's run and
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


def changed(before: dict, after: dict, untrained=frozenset()) -> list[str]:
    """The tensors that differ, leaving out `untrained`: a forward moves BatchNorm's running statistics on a
    skipped step too, and a tensor no optimizer holds (an EMA copy) is the lesson's own business; only the
    parameters an optimizer trains tell whether a step was applied or trained again."""
    return [
        k
        for k, v in before.items()
        if k not in untrained and (k not in after or after[k].shape != v.shape or not torch.equal(after[k], v))
    ]


def check(
    spec,
    overflows: list[dict],
    final: dict,
    steps: int,
    untrained=frozenset(),
    scales=(),
    growth=(2000, 2.0),
    blew_up=frozenset(),
) -> CheckResult:
    """`overflows` are the submission's overflowed steps (grader/judge/drive.py), in order: each with its weights
    and scale before and after, or the error it raised; `final` the weights after the last of the `steps`
    compared steps. A run cut at one of them ends its list there. `untrained` are the tensors no optimizer trains,
    by name; `scales` the scale after each step and `growth` the grader's GradScaler's (growth_interval,
    growth_factor), which bound how fast a backed-off scale may climb again; `blew_up` the steps whose loss went
    into backward already inf or NaN (they overflowed on their own, whatever the forced inf left behind)."""
    raised = next((o for o in overflows if o.get("error")), None)
    if raised is not None:
        return _raised(spec, raised["step"], raised["error"])
    said, shown = [], None  # the figures of the first step with a problem, else of the first step
    for i, o in enumerate(overflows):
        # where the weights are next looked at: before the next overflowed step, or after the last step
        later = overflows[i + 1] if i + 1 < len(overflows) else None
        next_seen = later["before"] if later else final
        last = (later["step"] if later else steps) - 1
        found, figures = _one_step(o, next_seen, last, untrained, blew_up)
        found += _backoff_undone(o, scales, last, growth)
        said += found
        if shown is None and (found or i == len(overflows) - 1):
            shown = figures if found else _one_step(overflows[0], final, -1, untrained)[1]
    measured = {**shown, "steps": [o["step"] for o in overflows]}
    if said:
        findings = [finding(s.key.split(".")[0], key=s.key, fix_key=FIXES.get(s.key), **s.params) for s in said]
        return CheckResult(
            "overflow", FAIL, say("overflow.fail", findings=said), measured, None, findings, weight=spec.weight
        )
    first = overflows[0]
    return CheckResult(
        "overflow",
        PASS,
        say("overflow.pass", step=first["step"], before=first["scale_before"], after=first["scale_after"]),
        measured,
        None,
        weight=spec.weight,
    )


FIXES = {"not_recovered.own": "not_recovered.fix_own"}


def _one_step(o: dict, next_seen: dict, last: int, untrained=frozenset(), blew_up=frozenset()) -> tuple[list, dict]:
    """What is wrong with one overflowed step: weights it changed, a scale that did not back off, and no step
    up to `last` (the step before the weights are next looked at, as `next_seen`) that trained again: because
    the inf stayed, unless a later step's own loss was already inf or NaN (then that is what the trace shows)."""
    step = o["step"]
    moved = changed(o["before"], o["after"], untrained)
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
    if not moved and step < last and not changed(o["after"], next_seen, untrained):
        own = min((s for s in blew_up if step <= s <= last), default=None)  # only some steps are traced
        key = "not_recovered" if own is None else "not_recovered.own"
        said.append(say(key, step=step, later=last - step, own=own))
    return said, measured


def _backoff_undone(o: dict, scales, last: int, growth: tuple[int, float]) -> list:
    """A back-off lasts: after it, the GradScaler grows its scale by growth_factor once per growth_interval good
    steps and no faster. A scale above that bound on a later step up to `last` means the back-off was undone (the
    scaler's state put back, a new scaler, update called more than once), so the scale that overflowed is tried
    again; the step right after the overflow cannot show that."""
    step, backed_off = o["step"], o["scale_after"]
    if backed_off is None or not math.isfinite(backed_off) or not backed_off < (o["scale_before"] or math.inf):
        return []  # no back-off to undo: _one_step says so
    interval, factor = growth
    for later in range(step + 1, min(last, len(scales) - 1) + 1):
        bound = backed_off * factor ** ((later - step) // interval)
        if not scales[later] <= bound * (1 + 1e-6):
            return [
                say(
                    "backoff_undone",
                    step=step,
                    backed_off=backed_off,
                    later=later,
                    scale=scales[later],
                    interval=interval,
                    factor=factor,
                )
            ]
    return []


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

"""A run in which the GradScaler skipped every step because the gradients held inf or NaN of the learner's own
making (a log of zero, a softmax over a fully masked row), not of the grader's forced overflow. Parity then sees
weights that never trained and the overflow check sees no step train again after its overflow; both are true,
but the cause is neither a block left out nor an inf kept in the gradients: each says what happened instead,
and where the non-finite values first showed (the trace's `gradients_nonfinite`)."""

from __future__ import annotations

import dataclasses

from grader.results import FAIL, CheckResult, finding, message_of
from grader.wording.catalog import say


def every_step_skipped(scales: list[float], init_scale: float, forced: set[int], traces: list[dict]) -> dict | None:
    """Where the scale backed off on every step the grader did not make overflow (a skipped step halves it; a
    step that trains keeps or grows it) and a traced step of the learner's own showed non-finite gradients: how
    many steps, the scale's fall, and the line of the first backward that left them. None otherwise."""
    if not scales:
        return None
    before = [init_scale, *scales[:-1]]
    own = [i for i in range(len(scales)) if i not in forced]
    if not own or not all(scales[i] < before[i] for i in own):
        return None
    seen = [
        e
        for t in traces
        if not t.get("overflow") and t.get("phase") != "prepare"
        for e in t.get("events", [])
        if e.get("ev") == "gradients_nonfinite"
    ]
    if not seen:
        return None
    return {"n": len(own), "line": seen[0].get("line"), "scale_from": init_scale, "scale_to": scales[-1]}


def skipped_finding(skipped: dict):
    line = skipped["line"]
    key = "all_steps_skipped" if line else "all_steps_skipped.no_line"
    before, after = skipped["scale_from"], skipped["scale_to"]
    return finding("all_steps_skipped", line, key=key, at=line, n=skipped["n"], before=before, after=after)


def reworded(results: list[CheckResult], skipped: dict | None) -> list[CheckResult]:
    """Parity's and the overflow check's failures said as what they are in such a run: every step skipped.
    Parity's findings (a layer that never trained) and the overflow check's not_recovered follow from it; the
    overflow check's other findings (a scale that did not back off) stay."""
    if skipped is None:
        return results
    out = []
    for r in results:
        if r.status == FAIL and r.id == "parity":
            f = skipped_finding(skipped)
            r = dataclasses.replace(r, message=message_of(f), findings=[f])
        elif r.status == FAIL and r.id == "overflow" and any(f.id == "not_recovered" for f in r.findings):
            kept = [f for f in r.findings if f.id != "not_recovered"]
            findings = [skipped_finding(skipped), *kept]
            said = say("overflow.fail", findings=[message_of(f) for f in findings])
            r = dataclasses.replace(r, message=said, findings=findings)
        out.append(r)
    return out

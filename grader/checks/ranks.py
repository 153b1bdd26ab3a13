"""Do the ranks agree? Ranks that all-reduce their gradients and step the same
way hold bit-identical weights after every step, and the same loss scale. The
grading process loads every rank's parameters itself (weights_only) and
compares them: a rank saying it agrees counts for nothing. Each tensor's
difference from rank 0 is measured against how far training moved it, as
parity measures the difference from the FP32 run."""

from __future__ import annotations

import math

from grader.checks import parity
from grader.results import FAIL, PASS, CheckResult, finding
from grader.wording.catalog import say


def deviations(mine: dict, first: dict, start: dict) -> dict[str, float]:
    """Per tensor: ||p_rank - p_rank0|| / ||p_rank0 - p0||."""
    return parity.update_deviations(mine, first, start)


def scale_disagreement(ranks: list) -> tuple[int, int, float, float] | None:
    """(step, rank, its scale, rank 0's) at the first step where a rank's loss scale differs from rank 0's, the
    forced-overflow step included."""
    first = ranks[0].scales  # the overflowed step's among them
    for r, data in enumerate(ranks[1:], 1):
        mine = data.scales
        for step, (a, b) in enumerate(zip(mine, first)):
            if a != b:
                return step, r, a, b
        if len(mine) != len(first):
            return min(len(mine), len(first)), r, math.nan, math.nan
    return None


def check(spec, ranks: list, start: dict, describe=lambda module: say("layer.module", name=module)) -> CheckResult:
    """`ranks` holds each rank's RunData (params after the compared steps; scales per step)."""
    first = ranks[0].params
    worst = (0.0, "", 0)
    for r, data in enumerate(ranks[1:], 1):
        dev, name = parity.worst(deviations(data.params, first, start))
        if not dev <= worst[0]:
            worst = (dev, name, r)
    dev, name, rank = worst
    measured = {
        "max_rank_update_rel_diff": dev if math.isfinite(dev) else None,
        "worst_param": name,
        "worst_rank": rank,
        "ranks": len(ranks),
    }
    threshold = {"update_rtol": spec.update_rtol}
    findings, problems = [], []
    if not dev <= spec.update_rtol:
        layer = parity.owner(name, describe)
        problems.append(say("ranks.params", rank=rank, name=name, layer=layer, dev=dev, tol=spec.update_rtol))
        findings.append(finding("ranks_disagree", rank=rank, layer=layer))
    scales = scale_disagreement(ranks)
    if scales is not None:
        step, r, mine, theirs = scales
        problems.append(say("ranks.scales", rank=r, step=step, mine=mine, base=theirs))
        findings.append(finding("scales_disagree", rank=r, step=step))
    if problems:
        return CheckResult(
            "ranks", FAIL, say("ranks.fail", problems=problems), measured, threshold, findings, weight=spec.weight
        )
    return CheckResult("ranks", PASS, say("ranks.pass", n=len(ranks), dev=dev), measured, threshold, weight=spec.weight)

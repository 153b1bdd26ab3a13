"""The call-order rules of gradient accumulation (micro_batches > 1 in a lesson's workload): one step and one
update per effective batch, a backward per micro-batch, no zero_grad between them, each loss divided by the
number of micro-batches. Part of grader/checks/call_order.py's rules, kept apart as the libraries' are."""

from __future__ import annotations

import math

from grader.checks.events import every
from grader.results import Finding, finding


def accumulation(events, ctx) -> list[Finding]:
    n = ctx["micro_batches"]
    if n <= 1:
        return []
    out = []
    steps = every(events, "scaler_step") or every(events, "optimizer_step")
    if len(steps) > 1:
        out.append(finding("step_every_micro_batch", steps[1]["line"], steps=len(steps), n=n))
    updates = every(events, "update")
    if updates:
        at = events.index(updates[0])
        forwards = sum(e["ev"] == "loss_op" for e in events[:at])
        losses = sum(e["ev"] == "loss_op" for e in events)  # losses autograd knows (not a custom formula)
        later_backward = any(e["ev"] == "backward" for e in events[at:])
        # a step that ran to its end and computed fewer losses than micro-batches skipped one: an update after all
        # of them is micro_batch_skipped's consequence, not a second mistake
        expected = losses if losses < n and not ctx.get("partial") else n
        if len(updates) > 1 or later_backward or (losses and forwards < expected):
            key = "update_every_micro_batch.repeated" if len(updates) > 1 else None
            out.append(
                finding(
                    "update_every_micro_batch",
                    updates[0]["line"],
                    key=key,
                    forwards=forwards,
                    n=n,
                    updates=len(updates),
                )
            )
    if not ctx.get("partial"):
        out += _backward_per_micro_batch(events, n)
    out += _zero_grad_between(events)
    out += _undivided_loss(events, n)
    return out


def _backward_per_micro_batch(events, n) -> list[Finding]:
    """Accumulation means one backward per micro-batch, each freeing its graph before the next forward."""
    backwards, losses = every(events, "backward"), every(events, "loss_op")
    if not backwards or len(backwards) >= n:
        return []
    if len(losses) >= n:
        return [
            finding(
                "one_backward_for_all_micro_batches", backwards[0]["line"], losses=len(losses), backwards=len(backwards)
            )
        ]
    return [finding("micro_batch_skipped", backwards[0]["line"], backwards=len(backwards), n=n)]


def _zero_grad_between(events) -> list[Finding]:
    first_bw = next((i for i, e in enumerate(events) if e["ev"] == "backward"), None)
    last_bw = max((i for i, e in enumerate(events) if e["ev"] == "backward"), default=None)
    if first_bw is None:
        return []
    inside = [e for e in events[first_bw:last_bw] if e["ev"] == "zero_grad"]
    if not inside:
        return []
    return [finding("zero_grad_every_micro_batch", inside[0]["line"])]


def _undivided_loss(events, n) -> list[Finding]:
    """Judged on the gradient that reached the optimizer, not on the loss expression: micro-batch k's loss went
    into its backward multiplied by m_k (the backward's value over the loss's: the scale, a division), and the
    accumulated gradient reached the first clip or step multiplied by c (the trace's `reached`: 1/S after an
    unscale_, less where the learner divided the gradients), so each micro-batch weighs c * m_k in what the
    optimizer got: 1/n when its loss was divided, 1 when it was not. A step whose gradients never reached a
    clip or an optimizer (skipped, not finite) is not judged."""
    losses, used = every(events, "loss_op"), every(events, "backward")
    last = max((i for i, e in enumerate(events) if e["ev"] == "backward"), default=None)
    c = next((e.get("reached") for e in events[last or 0 :] if e["ev"] in ("clip", "optimizer_step")), None)
    if not losses or len(losses) != len(used) or not c:
        return []
    weights = [
        c * u["value"] / e["value"] if e["value"] and u.get("value") is not None else None for e, u in zip(losses, used)
    ]
    # nearer 1 than 1/n, and than n: a weight far from both (a mix of scaled and unscaled gradients) is another
    # mistake's
    full = [k for k, w in enumerate(weights) if w and w > 0 and abs(math.log(w)) < math.log(n) / 2]
    if not full:
        return []
    if len(full) == len(weights):
        return [finding("loss_not_divided", losses[0]["line"], n=n)]
    which = ", ".join(str(k + 1) for k in full)
    return [
        finding("loss_not_divided", losses[full[0]]["line"], key="loss_not_divided.some", n=n, k=len(full), which=which)
    ]

"""Call-order rules for distributed data parallel training, over the trace of
real calls (grader/worker/tracing_distributed.py). The all-reduce that DDP runs in the
backward of a forward made outside `no_sync()` is invisible in the numbers:
averaging the gradients after every micro-batch gives the same result as once
after the last, only slower. So these rules read when it happened. The rule
across ranks compares what each rank did: code under `if rank == 0:` that
steps or updates makes the ranks drift apart."""

from __future__ import annotations

from grader.checks import fsdp_calls
from grader.checks.events import backwards, every, first
from grader.results import Finding, finding


def moved_after_wrap(trace, ctx) -> list[Finding]:
    """DDP registers hooks on the parameters as they are when it wraps the module: wrap after `.to(device)`.
    On CPU the move is a no-op and training is not affected, but the order is as wrong there as on CUDA, where
    DDP refuses (or mis-reduces) a module whose parameters are not on the rank's device."""
    events = trace["events"]
    moved = first(events, "moved_after_wrap")
    if moved:
        return [finding("wrapped_before_moved", moved["line"], call=f".{moved.get('to', 'to')}()")]
    wrap = first(events, "ddp_wrap", lesson=True) or first(events, "ddp_wrap")
    device = trace.get("device")
    if wrap and device and wrap.get("param_device") not in (None, device):
        return [
            finding(
                "wrapped_before_moved",
                wrap["line"],
                key="wrapped_before_moved.device",
                device=wrap["param_device"],
                expected=device,
            )
        ]
    return []


def prepare_rules(trace, ctx) -> list[Finding]:
    return moved_after_wrap(trace, ctx)


def step_rules(events, ctx) -> list[Finding]:
    n, out = ctx.get("micro_batches", 1), []
    syncs = [e for e in every(events, "ddp_forward") if e["sync"] and e.get("lesson", True)]
    reduced = [e for e in every(events, "all_reduce") if e.get("on_grad")]
    fsdp = fsdp_calls.sharded(ctx.get("prepare_events", []))  # FSDP2 reduces the gradients of what it shards
    if (
        ctx.get("ranks", 1) > 1
        and not syncs
        and not reduced
        and not fsdp
        and backwards(events)
        and not ctx.get("partial")
    ):
        out += _not_synchronised(events, ctx)
    if len(syncs) > 1:
        out.append(
            finding("allreduce_every_micro_batch", syncs[1]["line"], syncs=len(syncs), n=n, wasted=len(syncs) - 1)
        )
    elif syncs:
        after = [e for e in events[events.index(syncs[-1]) + 1 :] if e["ev"] == "forward"][1:]
        if after:
            out.append(finding("sync_not_last", syncs[-1]["line"], later=len(after)))
    out += moved_after_wrap({"events": events}, ctx)
    return out


def _not_synchronised(events, ctx) -> list[Finding]:
    """No backward averaged the lesson model's gradients. A DDP forward of another module (a throw-away wrapper
    beside the plain lesson model) all-reduces that module's gradients only: it is named as such."""
    decoy = next((e for e in every(events, "ddp_forward") if not e.get("lesson", True)), None)
    if decoy:
        return [finding("ddp_wraps_other_module", decoy["line"], ranks=ctx["ranks"])]
    ran = first(events, "ddp_forward")
    wrapped = first(ctx.get("prepare_events", []), "ddp_wrap", lesson=True) or first(events, "ddp_wrap", lesson=True)
    inner = first(events, "forward")
    if wrapped and not ran and inner:  # no micro-batch was in no_sync(): none went through the wrapper at all
        key, where = "gradients_not_synchronised.unwrapped", inner
    elif ran and (no_sync := first(events, "no_sync")):
        key, where = "gradients_not_synchronised.no_sync", no_sync
    else:
        key, where = None, ran or backwards(events)[0]
    return [finding("gradients_not_synchronised", where["line"], key=key, ranks=ctx["ranks"])]


# What a rank must do as often as every other rank, and how the learner writes it.
RANK_CALLS = {
    "scaler_step": "scaler.step(optimizer)",
    "optimizer_step": "optimizer.step()",
    "update": "scaler.update()",
    "unscale_": "scaler.unscale_(optimizer)",
    "backward": "backward()",
    "clip": "gradient clipping",
    "zero_grad": "zero_grad()",
}


def _until(events: list[dict], partial: list[dict]) -> list[dict]:
    """The part of a complete rank's events that matches what a rank that failed got through: up to the same
    occurrence of the call it failed in."""
    if not partial:
        return []
    last = partial[-1]["ev"]
    nth = sum(e["ev"] == last for e in partial)
    seen = 0
    for i, e in enumerate(events):
        seen += e["ev"] == last
        if seen == nth:
            return events[: i + 1]
    return events


def rank_rules(traces: list[dict]) -> list[Finding]:
    """The ranks of one step made different AMP calls: the first such call, at the line of a rank that made it."""
    steps: dict = {}
    for t in traces:
        if t.get("phase") != "prepare" and isinstance(t.get("rank"), int):
            steps.setdefault(t.get("step"), {})[t["rank"]] = t
    for _step, by_rank in sorted(steps.items(), key=lambda item: (item[0] is None, item[0] or 0)):
        if len(by_rank) < 2:
            continue
        partial = next((t["events"] for t in by_rank.values() if t.get("partial")), None)
        events = {
            r: (t["events"] if t.get("partial") or partial is None else _until(t["events"], partial))
            for r, t in by_rank.items()
        }
        for kind, call in RANK_CALLS.items():
            counts = {r: sum(e["ev"] == kind for e in ev) for r, ev in events.items()}
            if len(set(counts.values())) < 2:
                continue
            most = max(counts, key=lambda r: (counts[r], -r))
            fewest = min(counts, key=lambda r: (counts[r], r))
            line = next(e["line"] for e in events[most] if e["ev"] == kind)
            return [
                finding(
                    "call_on_some_ranks", line, call=call, rank=most, n=counts[most], other=fewest, m=counts[fewest]
                )
            ]
    return []

"""What torch.compile did during a step, from dynamo's own counters: frames compiled, graphs, graph breaks.
Read only once the real torch._dynamo is loaded (grader/worker/lazy_dynamo.py), so a step that compiles
nothing costs nothing."""

from __future__ import annotations

from grader.worker import lazy_dynamo


def counts() -> dict | None:
    """Dynamo's running totals, or None while nothing has compiled."""
    if not lazy_dynamo.real_loaded():
        return None
    from torch._dynamo.utils import counters

    return {
        "frames": int(counters["frames"].get("ok", 0)),
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "graph_breaks": int(sum(counters["graph_break"].values())),
    }


def grown(before: dict | None) -> dict | None:
    """What the totals grew by during one step, since `before` (None while nothing has compiled)."""
    after = counts()
    if after is None:
        return None
    before = before or dict.fromkeys(after, 0)
    return {k: after[k] - before.get(k, 0) for k in after}

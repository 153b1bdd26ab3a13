"""Reading the census the worker took of the learner's step (grader/worker/census.py):
the judge's side, in the grading process. A verdict is made on the steady steps,
all but the first, per category of slowdown."""

from __future__ import annotations

from collections import Counter

from grader.worker.census import LOW


def steady(steps: list[dict]) -> list[dict]:
    """The steps a verdict is made on: all but the first, which may build what later steps reuse (a constant
    copied to the device once, autocast's weight casts)."""
    return steps[1:] if len(steps) > 1 else steps


def of_kind(steps: list[dict], ev: str, **match) -> list[dict]:
    """Events of one kind over the steady steps, merged per (op, line, ...): `n` is the count over those steps,
    `worst` the most in any one step."""
    merged: dict[tuple, dict] = {}
    for step in steady(steps):
        here: Counter = Counter()
        for e in step["events"]:
            if e["ev"] != ev or any(e.get(k) != v for k, v in match.items()):
                continue
            key = tuple(sorted((k, v) for k, v in e.items() if k not in ("n", "bytes")))
            slot = merged.setdefault(key, {**e, "n": 0, "bytes": 0, "worst": 0})
            slot["n"] += e["n"]
            slot["bytes"] += e.get("bytes", 0)
            here[key] += e["n"]
        for key, n in here.items():
            merged[key]["worst"] = max(merged[key]["worst"], n)
    return sorted(merged.values(), key=lambda e: (e["line"] is None, e["line"] or 0))


def is_float32_matmul(e: dict) -> bool:
    return e["ev"] == "matmul" and e["dtype"] not in LOW


def per_step(steps: list[dict], ev: str, keep=None) -> int:
    """The most events of a kind (that `keep` accepts) in any one steady step."""
    worst = 0
    for step in steady(steps):
        worst = max(worst, sum(e["n"] for e in step["events"] if e["ev"] == ev and (keep is None or keep(e))))
    return worst


def float32_matmuls(steps: list[dict]) -> list[dict]:
    return [e for e in of_kind(steps, "matmul") if is_float32_matmul(e)]


def symptoms(steps: list[dict], device_type: str) -> dict[str, int | None]:
    """Per category, the most events in one steady step; None where this device cannot show it (no device to
    copy to on a CPU)."""
    return {
        "host_sync": per_step(steps, "sync"),
        "float32_matmul": per_step(steps, "matmul", is_float32_matmul),
        "host_device_copy": per_step(steps, "copy") if device_type == "cuda" else None,
    }


def summary(steps: list[dict], device_type: str) -> dict:
    """For the result's plots: counts per category and the matmuls by dtype, per steady step."""
    n = max(len(steady(steps)), 1)
    by_dtype: Counter = Counter()
    for e in of_kind(steps, "matmul"):
        by_dtype[e["dtype"]] += e["n"]
    return {
        "per_step": symptoms(steps, device_type),
        "matmuls_by_dtype": {k: round(v / n, 2) for k, v in sorted(by_dtype.items())},
    }

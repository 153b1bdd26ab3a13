"""The real torch.profiler around one step of the given code, in a trusted worker: the table of the busiest ops a
learner reads beside the verdict (the census in grader/worker/census.py is what the checks judge; this is what a
profile of the same step shows)."""

from __future__ import annotations

from contextlib import contextmanager

TOP_OPS = 12

# Rows shown whatever their time: what a profile shows a sync or a copy by (on a CPU they cost nothing, on a GPU
# the time they cost is the device's idling, not their own).
TELLING = (
    "aten::item",
    "aten::_local_scalar_dense",
    "aten::nonzero",
    "aten::masked_select",
    "aten::lift_fresh",
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "Memcpy HtoD",
    "Memcpy DtoH",
)


@contextmanager
def torch_profile(device_type: str, into: dict):
    """torch.profiler around one step; `into["top_ops"]` gets the busiest ops. On CUDA, device time ranks them."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device_type == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        yield
    into["top_ops"] = top_ops(prof.events(), device_type)


def top_ops(events, device_type: str) -> list[dict]:
    """One row per op and input dtype (an addmm in float beside one in bfloat16 is the point of the lesson), the
    busiest first, then the rows that tell a sync or a copy, however little time they took."""
    cuda = device_type == "cuda"
    rows: dict[tuple, dict] = {}
    for e in events:
        if e.name.startswith("ProfilerStep"):
            continue
        dtype = next((d for d in (getattr(e, "input_dtypes", None) or []) if d), "")
        row = rows.setdefault(
            (e.name, dtype),
            {
                "op": e.name,
                "calls": 0,
                "self_cpu_us": 0.0,
                "self_device_us": 0.0 if cuda else None,
                "dtypes": [dtype] if dtype else [],
            },
        )
        row["calls"] += 1
        row["self_cpu_us"] += float(e.self_cpu_time_total)
        if cuda:
            row["self_device_us"] += float(getattr(e, "self_device_time_total", 0.0))
    for row in rows.values():
        row["self_cpu_us"] = round(row["self_cpu_us"], 1)
        if cuda:
            row["self_device_us"] = round(row["self_device_us"], 1)
    ranked = sorted(rows.values(), key=lambda r: -(r["self_device_us"] if cuda else r["self_cpu_us"]))
    shown = ranked[:TOP_OPS]
    shown += [r for r in ranked[TOP_OPS:] if r["op"].startswith(TELLING)][:4]
    return shown

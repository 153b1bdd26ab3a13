"""What a lesson's own code reports to the lesson's checks: `record(name, value)`, a name every workload.setup
sees, which setup code and the objects it builds (a model's forward, a wrapper around the scheduler) call during
a step. The worker sends each step's records with its reply; the judge bounds them again and hands them to the
lesson's checks, never to parity, overflow or coverage.

A submission shares this process and can call `record` too (or forge its reply), so records are evidence of the
same trust as the call trace: a lesson check may read them, and the numbers the grader measures itself decide
what they cannot. Hence the bounds here and in grader/judge/protocol.py: a few plain values per step."""

from __future__ import annotations

MAX_PER_STEP = 64  # records kept per step; later ones in that step are dropped
MAX_NAME = 64
MAX_STRING = 200
MAX_LIST = 32

_step: int | None = None  # the step being run, None outside steps (records there are ignored)
_records: list[dict] = []


def record(name: str, value) -> None:
    """Reports `value` (a bool, int, float, short string, None, a one-element tensor, or a list of up to 32 of
    those) under `name` for the step being run. Outside a step it does nothing; beyond 64 records in one step the
    rest of that step's are dropped. A value of another kind raises TypeError: the lesson's code has a mistake."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise TypeError(f"record(name, value): name must be a string of 1 to {MAX_NAME} characters")
    plain = _plain(value, nested=False)
    if _step is not None and len(_records) < MAX_PER_STEP:
        _records.append({"step": _step, "name": name, "value": plain})


def _plain(value, nested: bool):
    import torch

    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else float(value)
    if isinstance(value, float):
        return value  # inf and NaN too: the channel is Python's JSON (Infinity, NaN), read back as floats
    if isinstance(value, str):
        return value[:MAX_STRING]
    if isinstance(value, (list, tuple)) and not nested:
        return [_plain(v, nested=True) for v in list(value)[:MAX_LIST]]
    raise TypeError(
        f"record(name, value): {type(value).__name__} is not a value a lesson can record (a bool, number, "
        "string, None, one-element tensor, or a list of those)"
    )


def begin(step: int) -> None:
    global _step
    _step = step
    _records.clear()


def end() -> list[dict]:
    """The records of the step that ends, in the order they were made."""
    global _step
    _step = None
    out = list(_records)
    _records.clear()
    return out

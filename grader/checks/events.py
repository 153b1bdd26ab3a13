"""Looking up calls in a step's trace (grader/worker/tracing.py events), for every module of call-order rules."""

from __future__ import annotations

# Every entry point of a backward pass: tensor.backward() and torch.autograd.backward() record "backward",
# torch.autograd.grad() records "autograd_grad" (it returns the gradients instead of accumulating them).
BACKWARDS = ("backward", "autograd_grad")


def every(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["ev"] == kind]


def first(events: list[dict], kind: str, **match) -> dict | None:
    """The first call of `kind` whose fields equal `match`, or None."""
    return next((e for e in events if e["ev"] == kind and all(e.get(k) == v for k, v in match.items())), None)


def backwards(events: list[dict]) -> list[dict]:
    """Every backward pass, whichever entry point ran it: the rules about how a backward runs (under autocast,
    on a scaled loss) hold for each."""
    return [e for e in events if e["ev"] in BACKWARDS]

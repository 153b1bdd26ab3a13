"""Whether a lesson's batch(step, seed) draws from a global random generator (torch's, Python's `random`,
NumPy's) rather than from one seeded by (step, seed): found by running it, twice per generator, with that
generator reseeded differently in between; data that change drew from it. The generators' states are put back
afterwards."""

from __future__ import annotations

import random
from contextlib import contextmanager

import torch

try:
    import numpy
except ImportError:  # pragma: no cover - numpy comes with torch's usual installs, not always
    numpy = None


def _reseeders() -> dict:
    out = {"torch": torch.manual_seed, "Python's random": random.seed}
    if numpy is not None:
        out["NumPy"] = numpy.random.seed
    return out


@contextmanager
def _kept_states():
    python_state = random.getstate()
    numpy_state = numpy.random.get_state() if numpy is not None else None
    with torch.random.fork_rng(devices=[]):
        try:
            yield
        finally:
            random.setstate(python_state)
            if numpy is not None:
                numpy.random.set_state(numpy_state)


def same(a, b) -> bool:
    """Equal data: tensors and arrays element by element (NaN equal to NaN), containers item by item."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.nan_to_num(), b.nan_to_num()))
    if numpy is not None and isinstance(a, numpy.ndarray) and isinstance(b, numpy.ndarray):
        return a.shape == b.shape and bool(numpy.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object without a plain equality: not data we can compare
        return True


def global_generators_drawn(batch, seed: int, step: int = 0) -> list[str]:
    """The global generators whose reseeding changes batch(step, seed); [] when it raises (reported elsewhere)."""
    drawn = []
    reseeders = _reseeders()
    for name in reseeders:
        outs = []
        with _kept_states():
            for variant in (1, 2):
                for other, reseed in reseeders.items():
                    reseed(variant if other == name else 0)
                try:
                    outs.append(batch(step, seed))
                except Exception:  # noqa: BLE001
                    return []
        if not same(*outs):
            drawn.append(name)
    return drawn

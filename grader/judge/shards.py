"""Puts together what the ranks saved of a sharded model (FSDP2: each rank
holds one piece of every parameter; grader/worker/sharded.py). Each rank says
where its piece lies in the full tensor, but says nothing more: the pieces are
placed here, in the grading process, and every element of every full tensor
must come from some rank. Where pieces overlap (a parameter replicated, or a
"mesh" of one rank per process), each rank's view keeps its own values there,
so the ranks check sees the ranks that disagree, as it does for DDP's copies."""

from __future__ import annotations

import math

import torch

from grader.judge.protocol import WorkerFailure, protocol


def assemble(params: list[dict], layouts: list) -> list[dict]:
    """Each rank's view of the full parameters: the full tensor made of every rank's piece, with the rank's own
    piece on top. `layouts[r]` is rank r's {"shape", "offset"} per sharded name, as it sent them (untrusted);
    a rank that sent none saved whole tensors. Without any layout, the ranks' tensors are returned as they are."""
    if not any(layouts):
        return params
    checked = [_layouts(lay, mine) for lay, mine in zip(layouts, params)]
    views: list[dict] = [dict(p) for p in params]
    for name in sorted({n for p in params for n in p}):
        held = [(r, p[name], checked[r].get(name)) for r, p in enumerate(params) if name in p]
        shapes = {tuple(lay[0]) if lay else tuple(t.shape) for _, t, lay in held}
        if len(shapes) != 1:
            raise WorkerFailure(protocol("error.params_shards", name=name))
        shape = shapes.pop()
        if sum(t.numel() for _, t, _ in held) < math.prod(shape):  # checked before any allocation
            raise WorkerFailure(protocol("error.params_shards", name=name))
        full = torch.zeros(shape)
        covered = torch.zeros(shape, dtype=torch.bool)
        for _, tensor, lay in held:
            _region(full, lay, tensor)[...] = tensor
            _region(covered, lay, tensor)[...] = True
        if not bool(covered.all()):
            raise WorkerFailure(protocol("error.params_shards", name=name))
        for r, tensor, lay in held:
            view = full.clone()
            _region(view, lay, tensor)[...] = tensor
            views[r][name] = view
    return views


def _region(full: torch.Tensor, layout, piece: torch.Tensor) -> torch.Tensor:
    """Where `piece` lies in `full`: all of it for a tensor saved whole."""
    if not layout:
        return full
    return full[tuple(slice(o, o + n) for o, n in zip(layout[1], piece.shape))]


def _layouts(sent, params: dict) -> dict[str, tuple[list[int], list[int]]]:
    """name -> (the full tensor's shape, the piece's offset in it). A forged layout (not ints, a piece that
    does not fit the tensor, a name the rank did not save) is a protocol error."""
    if sent is None:
        return {}
    if not isinstance(sent, dict):
        raise WorkerFailure(protocol("error.params_shards", name="?"))
    return {str(name)[:200]: _layout(name, lay, params) for name, lay in sent.items()}


def _layout(name, lay, params: dict) -> tuple[list[int], list[int]]:
    try:
        shape, offset, piece = list(lay["shape"]), list(lay["offset"]), params[name]
    except (KeyError, TypeError):
        raise WorkerFailure(protocol("error.params_shards", name=str(name)[:200])) from None
    ints = all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**40 for v in [*shape, *offset])
    fits = ints and len(shape) == len(offset) == piece.dim()
    if not fits or any(o + n > s for o, n, s in zip(offset, piece.shape, shape)):
        raise WorkerFailure(protocol("error.params_shards", name=str(name)[:200]))
    return shape, offset

"""What a rank saves of a model that FSDP2 (`fully_shard`) has sharded: each
parameter is a DTensor whose rank holds one piece. The rank saves that piece
as a plain tensor, with the full tensor's shape and the piece's offset in it,
and the grading process puts the ranks' pieces together itself
(grader/judge/shards.py). Gathering full tensors here, in the learner's
process, would make the rank the one that says what the model is."""

from __future__ import annotations

import sys


def local_pieces(state: dict) -> tuple[dict, dict]:
    """(name -> plain tensor, name -> {"shape": full shape, "offset": where the piece starts}) for a state dict
    whose values may be DTensors; plain tensors are saved whole and have no layout. Nothing is imported: where
    torch.distributed.tensor was never loaded there can be no DTensor."""
    dtensor = sys.modules.get("torch.distributed.tensor")
    kind = getattr(dtensor, "DTensor", None)
    if kind is None:
        return state, {}
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    plain, layouts = {}, {}
    for name, value in state.items():
        if isinstance(value, kind):
            _, offset = compute_local_shape_and_global_offset(value.shape, value.device_mesh, value.placements)
            plain[name] = value.to_local()
            layouts[name] = {"shape": list(value.shape), "offset": [int(o) for o in offset]}
        else:
            plain[name] = value
    return plain, layouts

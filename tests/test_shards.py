"""A model FSDP2 sharded is saved by each rank as its own pieces with their
layout; the grading process puts the full tensors together itself and never
takes a rank's word for more than where its piece lies
(grader/judge/shards.py)."""

import pytest
import torch

from grader.judge.shards import assemble
from grader.sandboxes.process import WorkerFailure

FULL = torch.arange(12.0).reshape(4, 3)


def halves(full=FULL):
    """What two ranks save of a parameter sharded on dim 0: their pieces and where each starts."""
    pieces = [{"w": full[:2].clone()}, {"w": full[2:].clone()}]
    layouts = [{"w": {"shape": [4, 3], "offset": [0, 0]}}, {"w": {"shape": [4, 3], "offset": [2, 0]}}]
    return pieces, layouts


def test_pieces_are_put_together_into_the_full_tensor_for_every_rank():
    views = assemble(*halves())
    assert all(torch.equal(v["w"], FULL) for v in views)


def test_whole_tensors_without_layouts_are_each_ranks_own():
    mine, theirs = {"w": FULL}, {"w": FULL + 1}
    views = assemble([mine, theirs], [None, None])
    assert torch.equal(views[0]["w"], FULL) and torch.equal(views[1]["w"], FULL + 1)


def test_overlapping_pieces_keep_each_ranks_values_so_disagreement_shows():
    """A "mesh" of one rank per process: each rank's piece is the whole tensor, and the ranks' views differ
    where they trained apart."""
    pieces = [{"w": FULL.clone()}, {"w": FULL + 1}]
    layouts = [{"w": {"shape": [4, 3], "offset": [0, 0]}}] * 2
    views = assemble(pieces, layouts)
    assert torch.equal(views[0]["w"], FULL) and torch.equal(views[1]["w"], FULL + 1)


@pytest.mark.parametrize(
    "forge",
    [
        lambda lay: lay[1]["w"].update(offset=[1, 0]),  # both pieces start in the first half: rows 3 missing
        lambda lay: lay[1]["w"].update(offset=[3, 0]),  # a piece past the tensor's end
        lambda lay: lay[1]["w"].update(shape=[4, 4]),  # the ranks disagree on the full shape
        lambda lay: lay[1]["w"].update(shape=[10**9, 3]),  # a shape no pieces could fill (never allocated)
        lambda lay: lay[1]["w"].update(offset=["2", 0]),
        lambda lay: lay[1].update(x={"shape": [1], "offset": [0]}),  # a layout for a tensor it did not save
        lambda lay: lay.__setitem__(1, ["w"]),
    ],
)
def test_a_layout_that_does_not_make_up_the_tensor_is_a_protocol_error(forge):
    pieces, layouts = halves()
    forge(layouts)
    with pytest.raises(WorkerFailure) as failure:
        assemble(pieces, layouts)
    assert failure.value.payload["kind"] == "protocol"

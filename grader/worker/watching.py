"""How the grader's wrappers around PyTorch's functions stay out of a learner's torch.compile. While dynamo
traces a frame (and while AOTAutograd and inductor compile it), a wrapper is the original function and nothing
else: dynamo traces PyTorch's own code, exactly as it would without the grader, and the calls the compiler
makes itself (AOTAutograd's torch.autograd.grad, say) are not recorded as the learner's. The grader's own code
(frame lookups for the learner's line, bookkeeping) would otherwise break the learner's graph or make dynamo
recompile on it. A wrapper keeps its original at hand: a torch function the learner called reaches a
torch-function mode after the wrapper ran, and the mode calls the original, not the wrapper a second time."""

from __future__ import annotations

import functools

import torch


def watching(original):
    """functools.wraps(original), and the original alone while torch.compile traces or compiles."""

    def decorate(wrapper):
        @functools.wraps(original)
        def call(*args, **kwargs):
            if torch.compiler.is_compiling():
                return original(*args, **kwargs)
            return wrapper(*args, **kwargs)

        call.__grader_original__ = original  # a torch-function mode calls the original (grader/worker/op_reads.py)
        return call

    return decorate

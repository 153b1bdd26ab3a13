"""The memory format of a 4-D tensor, as the trace reports it for a model's input and weights: a convolution runs
its channels_last kernels only when both are channels_last (NHWC), and a lesson about that layout checks both."""

from __future__ import annotations

import torch


def memory_format(t) -> str | None:
    """ "channels_last", "contiguous" (NCHW) or None for anything but a 4-D tensor. A tensor that is both (one
    channel, or 1x1 images) is "contiguous"; one that is neither (a strided slice) goes by its channels' stride:
    channels_last when the channels are its innermost dimension."""
    if not isinstance(t, torch.Tensor) or t.dim() != 4:
        return None
    if t.is_contiguous():
        return "contiguous"
    if t.is_contiguous(memory_format=torch.channels_last):
        return "channels_last"
    strides = t.stride()
    return "channels_last" if strides[1] == min(strides) and strides[1] < strides[3] else "contiguous"


def input_format(args) -> str | None:
    """The format of the first tensor among a forward's positional inputs."""
    first = next((a for a in args if isinstance(a, torch.Tensor)), None)
    return memory_format(first)


def weight_format(module: torch.nn.Module) -> str | None:
    """The format of the module's 4-D parameters (convolutions' weights): "contiguous" if any of them is, so
    that converting the first block alone does not pass for the model; None if it has none."""
    lazy = torch.nn.parameter.UninitializedParameter  # a lazy module's weight before its first forward has no shape
    formats = {memory_format(p) for p in module.parameters() if not isinstance(p, lazy) and p.dim() == 4}
    return "contiguous" if "contiguous" in formats else formats.pop() if formats else None

"""Names a learner recognises for the layers of a model: 'the second Linear
layer (model.1.0, 512->512)'. Built by the grading process from the model it
rebuilds itself, never taken from a worker's word, and kept as messages so
they are worded in the learner's language."""

from __future__ import annotations

import torch

from grader.wording.catalog import Said, say


def _shape(module) -> Said | None:
    if hasattr(module, "in_features"):
        return say("shape.features", a=module.in_features, b=module.out_features)
    if hasattr(module, "in_channels") and hasattr(module, "kernel_size"):
        return say("shape.channels", a=module.in_channels, b=module.out_channels)
    if hasattr(module, "num_embeddings"):
        return say("shape.embedding", a=module.num_embeddings, b=module.embedding_dim)
    if "Attention" in type(module).__name__:
        return say("shape.attention")
    return None


def ordinal(n: int) -> Said:
    return say(f"ordinal.{n}") if n <= 10 else say("ordinal.n", n=n)


def describe(model: torch.nn.Module) -> dict[str, Said]:
    """Module name -> its description. Several models sit in a ModuleDict, so their names start with the model's
    own ('critic.0.0'); a lone model's start with 'model.'."""
    prefix = "" if isinstance(model, torch.nn.ModuleDict) else "model."
    out, counts = {}, {}
    for name, module in model.named_modules():
        shape = _shape(module)
        if shape is None:
            continue
        kind = type(module).__name__
        counts[kind] = counts.get(kind, 0) + 1
        out[name or "model"] = say("layer", nth=ordinal(counts[kind]), kind=kind, name=f"{prefix}{name}", shape=shape)
    return out


def namer(layers: dict[str, Said]):
    """A function from module name to its description ('module x' for one the model does not have)."""
    return lambda name: layers.get(name) or say("layer.module", name=name)

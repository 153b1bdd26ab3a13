"""What the trace records of torchao's float8 training, for lessons that list `torchao` in
`workload.libraries`: each `convert_to_float8_training` call, with the names, widths and
scaling of the lesson model's modules that are `Float8Linear` once it returned (read from the
model itself, so a learner's own filter function says nothing the grader trusts), and the
lesson model's Linear layers it left in high precision; and each `Float8Linear` forward that a
traced step runs, by name, so modules swapped in by hand are seen too. The lesson check reads
these events (exercises/fp8_training.yaml).

torchao prints, when imported, that it cannot load its CUTLASS/sm90 extensions on a machine
without them: `quiet_import_warnings` keeps those lines (and a deprecation note torch logs
about torchao's enums) out of what the learner sees, in the worker only."""

from __future__ import annotations

import logging

from torch import nn

from grader.worker.tracing_distributed import holds_lesson_model
from grader.worker.watching import watching

# The lines torchao and torch log when torchao is imported on a machine without its compiled extensions.
NOISE = ("Failed to load", "is an Enum subclass and is now natively supported")


class _Noise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in NOISE)


def quiet_import_warnings() -> None:
    """Installed before anything imports torchao; a logger's filter survives the library taking its logger."""
    for name in ("torchao", "torch.utils._pytree"):
        logging.getLogger(name).addFilter(_Noise())


def _names(rec) -> dict[int, str]:
    """Every module of the lesson's models by id, named as `named_modules` names it (model-prefixed when the
    lesson has several)."""
    names: dict[int, str] = {}
    for i, model in enumerate(rec.models):
        prefix = f"model{i}." if len(rec.models) > 1 else ""
        for name, module in model.named_modules():
            names.setdefault(id(module), prefix + name)
    return names


def _scaling(module) -> str:
    config = getattr(module, "config", None)
    cast = getattr(config, "cast_config_weight", None)
    granularity = getattr(cast, "scaling_granularity", None)
    return str(getattr(granularity, "value", granularity)) if granularity is not None else "unknown"


def _linears(rec, float8_cls) -> tuple[list[dict], list[dict]]:
    """The lesson models' Float8Linear modules and their plain Linear layers, each {name, in, out}."""
    converted, plain = [], []
    for model in rec.models:
        for module in model.modules():
            if not isinstance(module, nn.Linear):
                continue
            row = {"name": _names(rec).get(id(module), "?"), "in": module.in_features, "out": module.out_features}
            if isinstance(module, float8_cls):
                converted.append({**row, "scaling": _scaling(module)})
            else:
                plain.append(row)
    return converted, plain


def _new_params(rec, before: set[int]) -> list[str]:
    """The lesson models' parameters that are new objects since `before`: the optimizer the grader built holds
    the old ones (enable_fsdp_float8_all_gather=True wraps each converted weight in a new Parameter)."""
    out = []
    for i, model in enumerate(rec.models):
        prefix = f"model{i}." if len(rec.models) > 1 else ""
        out += [prefix + name for name, p in model.named_parameters() if id(p) not in before]
    return out


def _emulated(module, forward, *args, **kwargs):
    """A Float8Linear forward with emulate=False on a CPU, run emulated. Whether the real FP8 path runs on a
    CPU depends on its kernels (it stops on some, runs on others), and a verdict must not depend on which CPU
    graded it: the lesson check names the mistake from the event (float8_not_emulated), and the run goes on
    with FP8's numbers so every other check still has evidence. The backward reads the same config."""
    saved = module.linear_mm_config
    module.linear_mm_config = type(saved)(*(c._replace(emulate=True) for c in saved))
    try:
        return forward(module, *args, **kwargs)
    finally:
        module.linear_mm_config = saved


def step_state(rec) -> None:
    """At the end of each traced step, which of the lesson model's Linear layers are Float8Linear now, read from
    the model itself: what convert_to_float8_training left can be undone after it returned (a module's class
    set back to nn.Linear), and the lesson check judges the model the steps trained, not the one the
    conversion returned."""
    from torchao.float8.float8_linear import Float8Linear

    converted, plain = _linears(rec, Float8Linear)
    rec.emit("float8_state", converted=converted, plain=plain)


def install(rec) -> list[tuple[object, str]]:
    import torchao.float8 as float8
    import torchao.float8.float8_linear_utils as utils
    from torchao.float8.float8_linear import Float8Linear

    convert, forward = utils.convert_to_float8_training, Float8Linear.forward

    @watching(convert)
    def convert_w(module, *args, **kwargs):
        before = {id(p) for model in rec.models for p in model.parameters()}
        result = convert(module, *args, **kwargs)
        converted, plain = _linears(rec, Float8Linear)
        rec.emit(
            "float8_convert",
            lesson=holds_lesson_model(rec, module),
            converted=converted,
            plain=plain,
            emulate=bool(getattr(kwargs.get("config"), "emulate", False)),
            new_params=_new_params(rec, before),
        )
        return result

    @watching(forward)
    def forward_w(self_, *args, **kwargs):
        emulate = bool(getattr(getattr(self_, "config", None), "emulate", False))
        if rec.active:
            rec.emit(
                "float8_forward",
                name=_names(rec).get(id(self_)),
                **{"in": self_.in_features, "out": self_.out_features},
                scaling=_scaling(self_),
                emulate=emulate,
            )
        if emulate or self_.weight.device.type != "cpu":
            return forward(self_, *args, **kwargs)
        return _emulated(self_, forward, *args, **kwargs)

    utils.convert_to_float8_training = float8.convert_to_float8_training = convert_w
    Float8Linear.forward = forward_w
    return [(utils, "convert_to_float8_training"), (float8, "convert_to_float8_training"), (Float8Linear, "forward")]

"""Call-order rules for Hugging Face Accelerate, over the trace of real calls
(grader/worker/tracing_accelerate.py). Accelerate owns the AMP calls: its prepared
model runs under autocast, `accelerator.backward` divides the loss by the
accumulation steps and scales it when there is a GradScaler, the prepared
optimizer steps (and unscales, and updates the scale) only when
`sync_gradients` is true, and `accelerator.clip_grad_norm_` unscales before it
clips. The mistakes are going around it, or doing its work twice."""

from __future__ import annotations

from grader.checks.events import every, first
from grader.results import Finding, finding

PRECISION = {"bfloat16": "bf16", "float16": "fp16"}


def _through(events: list[dict], i: int, kind: str) -> bool:
    """Whether event i is the plain PyTorch call an Accelerate call of `kind` made just before it (the scaler's
    scale_/unscale_ may come between)."""
    for e in reversed(events[:i]):
        if e["ev"] in ("scale", "unscale_"):
            continue
        return e["ev"] == kind
    return False


def prepare_rules(trace, ctx) -> list[Finding]:
    events = trace["events"]
    init = first(events, "accelerator_init")
    if init is None:
        return []
    out, expected = [], PRECISION.get(ctx["amp_dtype"], ctx["amp_dtype"])
    if init["mixed_precision"] == "no":
        out.append(finding("accelerator_without_mixed_precision", init["line"], expected=expected))
    elif init["mixed_precision"] != expected:
        out.append(
            finding(
                "accelerator_wrong_precision",
                init["line"],
                got=init["mixed_precision"],
                expected=expected,
                dtype=ctx["amp_dtype"],
                device=ctx["device_type"],
            )
        )
    n = ctx.get("micro_batches", 1)
    if n > 1 and init["accumulation_steps"] != n:
        out.append(finding("accumulation_steps_mismatch", init["line"], got=init["accumulation_steps"], n=n))
    prepared = every(events, "accelerator_prepare")
    where = (prepared[0] if prepared else init)["line"]
    if not any(e.get("lesson_models", e["models"]) for e in prepared):
        other = any(e["models"] for e in prepared)  # a module was prepared, but not the lesson's model
        out.append(finding("model_not_prepared", where, key="model_not_prepared.other_module" if other else None))
    if not any(e["optimizers"] for e in prepared):
        out.append(finding("optimizer_not_prepared", where))
    return out


def step_rules(events, ctx) -> list[Finding]:
    init = first(ctx.get("prepare_events", []), "accelerator_init") or first(events, "accelerator_init")
    if init is None:
        return []
    out = []
    plain = next(
        (e for i, e in enumerate(events) if e["ev"] == "backward" and not _through(events, i, "accelerator_backward")),
        None,
    )
    if plain:
        out.append(finding("backward_not_through_accelerator", plain["line"]))
    out += _divided_by_hand(events)
    plain_clip = next(
        (e for i, e in enumerate(events) if e["ev"] == "clip" and not _through(events, i, "accelerator_clip")), None
    )
    if plain_clip:
        out.append(finding("clip_not_through_accelerator", plain_clip["line"]))
    early = next((e for e in every(events, "accelerator_clip") if not e["sync_gradients"]), None)
    if early:
        out.append(finding("clip_outside_sync_gradients", early["line"]))
    out += _unscaled_twice(events)
    if init["accumulation_steps"] > 1 and not every(events, "accumulate") and not ctx.get("partial"):
        where = first(events, "accelerator_backward") or first(events, "backward") or init
        stepped = len(every(events, "scaler_step") or every(events, "optimizer_step"))
        key = "accumulate_missing.stepped_once" if stepped <= 1 else None  # not "stepped on every micro-batch"
        out.append(finding("accumulate_missing", where["line"], key=key, n=init["accumulation_steps"]))
    return out


def _unscaled_twice(events) -> list[Finding]:
    """accelerator.clip_grad_norm_ unscales the gradients itself (GradScaler.unscale_, with fp16 only) before it
    clips: after a manual scaler.unscale_, or a second clip before the step, fp16 raises "unscale_() has already
    been called". With bf16 (every CPU) there is no scaler and nothing raises, so the trace names it there too."""
    seen = None
    for e in events:
        if e["ev"] in ("optimizer_step", "scaler_step", "update"):
            seen = None
        elif e["ev"] == "unscale_" or (e["ev"] == "accelerator_clip" and e.get("sync_gradients")):
            if seen is not None and e["ev"] == "accelerator_clip":
                key = "accelerator_unscale_twice.manual" if seen["ev"] == "unscale_" else None
                return [finding("accelerator_unscale_twice", e["line"], key=key, first=seen["line"] or "?")]
            seen = seen or e
    return []


def _divided_by_hand(events) -> list[Finding]:
    """accelerator.backward(loss) divides by gradient_accumulation_steps itself: a loss it gets already divided
    is divided twice, and the accumulated gradient is that many times too small."""
    raw = None
    for e in events:
        if e["ev"] == "loss_op":
            raw = e.get("value")
        elif e["ev"] == "accelerator_backward":
            n, passed = e.get("accumulation_steps", 1), e.get("value")
            if n > 1 and raw and passed is not None and abs(passed - raw / n) < abs(passed - raw):
                return [finding("loss_divided_by_hand", e["line"], n=n)]
    return []

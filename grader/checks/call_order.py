"""Diagnoses the order of AMP calls from the trace of real calls. Each rule
looks for one classic mistake and says what it is and how to fix it; the
trace gives the learner's line."""

from __future__ import annotations

from grader.results import FAIL, PASS, CheckResult, Finding

DEPRECATED_NOTE = (
    "torch.cuda.amp.autocast / torch.cuda.amp.GradScaler are deprecated spellings",
    "write torch.autocast(device_type=..., dtype=...) and torch.amp.GradScaler(device_type) instead",
)


def _first(events, kind, **match):
    return next((e for e in events if e["ev"] == kind and all(e.get(k) == v for k, v in match.items())), None)


def _all(events, kind):
    return [e for e in events if e["ev"] == kind]


def master_weights(trace, ctx) -> list[Finding]:
    low = [d for d in trace["param_dtypes"] if d in ("float16", "bfloat16")]
    cast = _first(trace["events"], "cast_model")
    if not low and not cast:
        return []
    low = low or ["16-bit"]
    return [Finding(
        "master_weights_16bit",
        f"the model's parameters are {', '.join(low)}: the model itself was cast to 16-bit "
        "(.half(), .bfloat16() or .to(float16)), so the optimizer updates 16-bit weights and small updates are lost",
        "keep the model in float32 and let torch.autocast cast each op on the fly", cast["line"] if cast else None)]


def autocast_usage(events, ctx) -> list[Finding]:
    wrong = next((e for e in _all(events, "autocast_enter") if e["device_type"] != ctx["device_type"]), None)
    entered = [e for e in _all(events, "autocast_enter") if e["enabled"]]
    if wrong and not entered:
        entered = [wrong]
    if not entered:
        return [Finding("no_autocast", "no torch.autocast region was entered during the step, so everything ran in float32",
                        "wrap the forward pass and the loss in `with torch.autocast(device_type=device_type, "
                        "dtype=amp_dtype):`")]
    out = []
    for e in entered:
        if e["device_type"] != ctx["device_type"]:
            out.append(Finding(
                "autocast_wrong_device",
                f"autocast was entered for device_type={e['device_type']!r}, but the model runs on "
                f"{ctx['device_type']!r}, so it had no effect",
                "pass the device_type argument: torch.autocast(device_type=device_type, dtype=amp_dtype)", e["line"]))
        elif e["dtype"] != ctx["amp_dtype"]:
            out.append(Finding(
                "autocast_wrong_dtype",
                f"autocast used dtype={e['dtype']} but this exercise on {ctx['device_type']} expects {ctx['amp_dtype']}",
                "use the amp_dtype argument instead of a hard-coded dtype", e["line"]))
    return out


def autocast_scope(events, ctx) -> list[Finding]:
    out = []
    bw = next((e for e in _all(events, "backward") if e["autocast"]), None)
    if bw:
        out.append(Finding(
            "backward_inside_autocast",
            "backward() was called inside the autocast block; the backward pass should not run under autocast "
            "(its ops already use the dtypes chosen in the forward pass)",
            "dedent the backward call so it comes after the `with torch.autocast(...)` block", bw["line"]))
    fw = next((e for e in _all(events, "forward") if not e["autocast"]), None)
    if fw:
        out.append(Finding(
            "forward_outside_autocast",
            "the model's forward pass ran outside autocast, so its matmuls ran in float32",
            "call the model inside the `with torch.autocast(...)` block", fw["line"]))
    elif any(e["autocast"] for e in _all(events, "forward")):
        loss = next((e for e in _all(events, "loss_op") if not e["autocast"]), None)
        if loss:
            out.append(Finding(
                "loss_outside_autocast",
                "the loss was computed after leaving the autocast block",
                "compute the loss inside the `with torch.autocast(...)` block too: autocast keeps loss ops in "
                "float32 by itself, and the recipe is forward + loss under autocast, backward outside", loss["line"]))
    return out


def scaler_usage(events, ctx) -> list[Finding]:
    out = []
    bw = next((e for e in _all(events, "backward") if not e["scaled"]), None)
    if bw:
        out.append(Finding(
            "backward_unscaled",
            "backward() was called on the unscaled loss, so small float16 gradients can underflow to zero",
            "call scaler.scale(loss).backward()", bw["line"]))
    direct = next((e for e in _all(events, "optimizer_step") if not e["via_scaler"]), None)
    if direct:
        out.append(Finding(
            "optimizer_step_direct",
            "optimizer.step() was called directly, bypassing the scaler: gradients are still multiplied by the "
            "scale, and steps with inf/NaN gradients are not skipped",
            "call scaler.step(optimizer) instead of optimizer.step()", direct["line"]))
    steps, updates = _all(events, "scaler_step"), _all(events, "update")
    if steps and not updates:
        out.append(Finding(
            "update_missing", "scaler.update() was never called, so the scale never adapts (and unscale_ "
            "bookkeeping is never reset)", "call scaler.update() once after scaler.step(optimizer)", steps[-1]["line"]))
    elif updates and not direct and (not steps or events.index(updates[0]) < events.index(steps[0])):
        out.append(Finding(
            "update_before_step", "scaler.update() was called before scaler.step(optimizer)",
            "call scaler.step(optimizer) first, then scaler.update()", updates[0]["line"]))
    if len(updates) > 1 and ctx.get("micro_batches", 1) <= 1:
        out.append(Finding(
            "update_more_than_once", f"scaler.update() ran {len(updates)} times in one iteration: the scale "
            "changes between the optimizers' steps, so their inf/NaN checks and unscaling disagree",
            "step every optimizer through the scaler first, then call scaler.update() once, at the end of the "
            "iteration", updates[0]["line"]))
    out += _unscale_rules(events)
    return out


def _unscale_rules(events) -> list[Finding]:
    """unscale_ at most once per optimizer between updates; clipping after at least one unscale_."""
    out, unscaled, scaled_grads = [], {}, False
    for e in events:
        if e["ev"] == "backward" and e.get("scaled"):
            scaled_grads = True
        elif e["ev"] == "unscale_":
            opt = e.get("optimizer", 0)
            unscaled[opt] = unscaled.get(opt, 0) + 1
            if unscaled[opt] == 2 and not any(f.id == "unscale_twice" for f in out):
                out.append(Finding(
                    "unscale_twice", "scaler.unscale_(optimizer) was called twice in one step",
                    "call unscale_ once per optimizer per step, right before clipping", e["line"]))
        elif e["ev"] == "update":
            unscaled = {}
        elif e["ev"] == "clip" and scaled_grads and not unscaled:
            out.append(Finding(
                "clip_without_unscale",
                "gradients were clipped while still multiplied by the loss scale, so the clipping threshold "
                "is applied to the wrong values",
                "call scaler.unscale_(optimizer) right before clipping", e["line"]))
    return out


def accumulation(events, ctx) -> list[Finding]:
    n = ctx["micro_batches"]
    if n <= 1:
        return []
    out = []
    steps = _all(events, "scaler_step") or _all(events, "optimizer_step")
    if len(steps) > 1:
        out.append(Finding(
            "step_every_micro_batch",
            f"the optimizer stepped {len(steps)} times for one effective batch of {n} micro-batches",
            "accumulate: call backward for every micro-batch, but step (and update) only once, after the last one",
            steps[1]["line"]))
    updates = _all(events, "update")
    if updates:
        first = events.index(updates[0])
        forwards = sum(e["ev"] == "loss_op" for e in events[:first])
        counted = any(e["ev"] == "loss_op" for e in events)  # a loss autograd knows (not a custom formula)
        later_backward = any(e["ev"] == "backward" for e in events[first:])
        if len(updates) > 1 or later_backward or (counted and forwards < n):
            out.append(Finding(
                "update_every_micro_batch", f"scaler.update() ran after {forwards} of the {n} micro-batches' "
                "losses were computed" + (f", and {len(updates)} times in one step" if len(updates) > 1 else "") +
                ": the scale must stay the same for all micro-batches of one effective batch",
                "call scaler.update() once per effective batch, after scaler.step(optimizer)", updates[0]["line"]))
    if not ctx.get("partial"):
        out += _backward_per_micro_batch(events, n)
    out += _zero_grad_between(events)
    out += _undivided_loss(events, n)
    return out


def _backward_per_micro_batch(events, n) -> list[Finding]:
    """Accumulation means one backward per micro-batch, each freeing its graph before the next forward."""
    backwards, losses = _all(events, "backward"), _all(events, "loss_op")
    if not backwards or len(backwards) >= n:
        return []
    if len(losses) >= n:
        return [Finding(
            "one_backward_for_all_micro_batches",
            f"the losses of {len(losses)} micro-batches were added up and back-propagated in {len(backwards)} "
            "backward() call(s), so every micro-batch's graph and activations stayed in memory until then: "
            "that is the memory gradient accumulation exists to save",
            "call scaler.scale(loss / n).backward() inside the loop, once per micro-batch",
            backwards[0]["line"])]
    return [Finding(
        "micro_batch_skipped", f"backward() ran {len(backwards)} time(s) for {n} micro-batches, so some "
        "micro-batches never reached the gradient",
        "loop over every micro-batch and call backward once for each", backwards[0]["line"])]


def _zero_grad_between(events) -> list[Finding]:
    first_bw = next((i for i, e in enumerate(events) if e["ev"] == "backward"), None)
    last_bw = max((i for i, e in enumerate(events) if e["ev"] == "backward"), default=None)
    if first_bw is None:
        return []
    inside = [e for e in events[first_bw:last_bw] if e["ev"] == "zero_grad"]
    if not inside:
        return []
    return [Finding(
        "zero_grad_every_micro_batch", "gradients were zeroed between micro-batches, so only the last one counts",
        "call optimizer.zero_grad() once per effective batch (before the first micro-batch or after the step)",
        inside[0]["line"])]


def _undivided_loss(events, n) -> list[Finding]:
    raw = [e["value"] for e in _all(events, "loss_op")]
    used = [e["value"] for e in (_all(events, "scale") or _all(events, "backward"))]
    if not raw or not used or len(raw) != len(used):
        return []
    divided = sum(abs(u - r / n) < abs(u - r) for r, u in zip(raw, used))
    if divided == len(used):
        return []
    line = (_all(events, "scale") or _all(events, "backward"))[0]["line"]
    return [Finding(
        "loss_not_divided",
        f"each micro-batch's loss was back-propagated at full size, so the accumulated gradient is {n}x "
        "the gradient of the effective batch",
        f"divide each micro-batch loss by the number of micro-batches (loss / {n}) before scaling it", line)]


def deprecated_spelling(events, ctx) -> list[Finding]:
    e = _first(events, "autocast_enter", deprecated=True)
    if e:
        return [Finding("deprecated_api", *DEPRECATED_NOTE, e["line"], severity="info")]
    return []


def missing_step(events, ctx) -> list[Finding]:
    if ctx.get("partial") or _all(events, "optimizer_step") or _all(events, "scaler_step"):
        return []
    if ctx["scaler"]:
        return [Finding("scaler_step_missing", "the optimizer never stepped during the training step",
                        "call scaler.step(optimizer) after the backward pass")]
    return [Finding("step_missing", "the optimizer never stepped during the training step",
                    "call optimizer.step() after the backward pass")]


def diagnose(traces: list[dict], ctx: dict) -> list[Finding]:
    """Findings over all traced steps, deduplicated by mistake id."""
    found: dict[str, Finding] = {}
    for trace in traces:
        events = trace["events"]
        ctx = {**ctx, "partial": trace.get("partial", False)}
        rules = [missing_step, deprecated_spelling, accumulation]
        if ctx["autocast"]:
            rules += [autocast_usage]
            if any(e["ev"] == "autocast_enter" and e["enabled"] for e in events):
                rules += [autocast_scope]
        if ctx["scaler"]:
            rules += [scaler_usage]
        findings = master_weights(trace, ctx) if "param_dtypes" in trace else []
        for rule in rules:
            findings += rule(events, ctx)
        for f in findings:
            found.setdefault(f.id, f)
    return list(found.values())


def merge(found: list[Finding], static: list[Finding], *, traced: bool) -> list[Finding]:
    """The trace decides; the source lends its line numbers. Static-only
    mistakes count only when no step could be traced (it is a heuristic)."""
    by_id = {f.id: f for f in static}
    for f in found:
        if f.line is None and f.id in by_id:
            f.line = by_id[f.id].line
    known = {f.id for f in found}
    extra = [f for f in static if f.id not in known and (f.severity == "info" or not traced)]
    return found + extra


def check(spec, traces: list[dict], ctx: dict, static_findings: list[Finding]) -> CheckResult:
    ctx = {**ctx, "autocast": spec.autocast, "scaler": spec.scaler}
    findings = merge(diagnose(traces, ctx), static_findings, traced=bool(traces))
    errors = [f for f in findings if f.severity == "error"]
    if not traces:
        return CheckResult("call_order", FAIL if errors else "error",
                           errors[0].message if errors else "no step could be traced", findings=findings,
                           weight=spec.weight)
    if errors:
        n = len(errors)
        message = (f"{n} mistake{'s' if n > 1 else ''} in the order of AMP calls; the first: "
                   f"{errors[0].message}" if n > 1 else errors[0].message)
        return CheckResult("call_order", FAIL, message, {"mistakes": [f.id for f in errors]}, findings=findings,
                           weight=spec.weight)
    return CheckResult("call_order", PASS, "the AMP calls happen in the right order", {"mistakes": []},
                       findings=findings, weight=spec.weight)

"""Diagnoses the order of AMP calls from the trace of real calls. Each rule
looks for one classic mistake and says what it is and how to fix it; the
trace gives the learner's line."""

from __future__ import annotations

from grader.checks import accelerate_calls, ddp_calls, fsdp_calls
from grader.checks.accumulation_calls import accumulation
from grader.checks.events import BACKWARDS, backwards, every, first
from grader.results import FAIL, PASS, CheckResult, Finding, finding, message_of
from grader.wording.catalog import say


def master_weights(trace, ctx) -> list[Finding]:
    low = [d for d in trace["param_dtypes"] if d in ("float16", "bfloat16")]
    cast = first(trace["events"], "cast_model")
    if not low and not cast:
        return []
    # float32 parameters beside 16-bit ones: a submodule was cast, not "the model itself"
    key = "master_weights_16bit.submodule" if low and "float32" in trace["param_dtypes"] else None
    low = low or ["16-bit"]
    return [finding("master_weights_16bit", cast["line"] if cast else None, key=key, dtypes=", ".join(low))]


def autocast_usage(events, ctx) -> list[Finding]:
    wrong = next((e for e in every(events, "autocast_enter") if e["device_type"] != ctx["device_type"]), None)
    entered = [e for e in every(events, "autocast_enter") if e["enabled"]]
    if wrong and not entered:
        entered = [wrong]
    if not entered:
        return [_autocast_off(events, ctx)]
    out = []
    for e in entered:
        if e["device_type"] != ctx["device_type"]:
            out.append(
                finding("autocast_wrong_device", e["line"], device=e["device_type"], expected=ctx["device_type"])
            )
        elif e["dtype"] != ctx["amp_dtype"]:
            out.append(
                finding(
                    "autocast_wrong_dtype",
                    e["line"],
                    dtype=e["dtype"],
                    device=ctx["device_type"],
                    expected=ctx["amp_dtype"],
                )
            )
    return out


def _autocast_off(events, ctx) -> Finding:
    """No region with autocast on. One entered with enabled=False (a flag, an expression that was False here) was
    entered all the same: the learner wrote it, so saying none was entered would be false; name it and its line.
    PyTorch itself turns off a region whose dtype it does not cast to (float32): that dtype is the mistake."""
    off = next((e for e in every(events, "autocast_enter") if e["device_type"] == ctx["device_type"]), None)
    if off is None:
        return finding("no_autocast")
    if off["dtype"] not in ("float16", "bfloat16"):
        return finding(
            "autocast_wrong_dtype",
            off["line"],
            dtype=off["dtype"],
            device=ctx["device_type"],
            expected=ctx["amp_dtype"],
        )
    return finding("no_autocast", off["line"], key="no_autocast.disabled", fix_key="no_autocast.fix_disabled")


def autocast_scope(events, ctx) -> list[Finding]:
    out = []
    bw = next((e for e in backwards(events) if e["autocast"]), None)
    if bw:
        out.append(finding("backward_inside_autocast", bw["line"], key=_spelled(bw, "backward_inside_autocast")))
    fw = next((e for e in every(events, "forward") if not e["autocast"]), None)
    if fw:
        out.append(finding("forward_outside_autocast", fw["line"]))
    elif any(e["autocast"] for e in every(events, "forward")):
        loss = next((e for e in every(events, "loss_op") if not e["autocast"]), None)
        if loss:
            out.append(finding("loss_outside_autocast", loss["line"]))
    return out


def _spelled(backward: dict, id: str) -> str | None:
    """The wording of a backward finding for the entry point the learner called: torch.autograd.grad is named
    as such (its gradients are returned, not accumulated, but it is a backward pass all the same)."""
    return f"{id}.autograd_grad" if backward["ev"] == "autograd_grad" else None


def scaler_usage(events, ctx) -> list[Finding]:
    out = []
    bw = next((e for e in backwards(events) if not e["scaled"]), None)
    if bw:
        out.append(finding("backward_unscaled", bw["line"], key=_spelled(bw, "backward_unscaled")))
    direct = next((e for e in every(events, "optimizer_step") if not e["via_scaler"]), None)
    if direct:
        out.append(finding("optimizer_step_direct", direct["line"], key=_direct_step_key(events, direct)))
    scalers = sorted({e.get("scaler", 0) for e in events if e["ev"] in SCALER_CALLS})
    if len(scalers) > 1:
        second = next(e for e in events if e["ev"] in SCALER_CALLS and e.get("scaler", 0) == scalers[1])
        out.append(finding("second_scaler", second["line"], n=len(scalers)))
    for scaler in scalers or [0]:  # each scaler's calls in their own order: a second scaler is said once, above
        own = [e for e in events if e["ev"] not in SCALER_CALLS or e.get("scaler", 0) == scaler]
        out += [f for f in _update_rules(own, ctx, direct) if f.id not in {o.id for o in out}]
    out += _unscale_rules(events) + unscaled_too_early(events)
    return out


def unscaled_too_early(events) -> list[Finding]:
    """A backward that added gradients to an optimizer's parameters after its unscale_ and before its step (the
    trace compares their gradients around the backward): the step gets gradients divided by the scale beside
    gradients still multiplied by it. Said at the unscale_ (also the line of the nonfinite loss it leads to,
    grader/judge/evaluate.py)."""
    for i, e in enumerate(events):
        if e["ev"] == "backward_after_unscale" and e.get("optimizers"):
            opt = e["optimizers"][0]
            unscale = next(
                (u for u in reversed(events[:i]) if u["ev"] == "unscale_" and u.get("optimizer") == opt), None
            )
            if unscale is not None:
                return [finding("unscale_before_backward", unscale["line"], backward=e["line"])]
    return []


SCALER_CALLS = ("scale", "unscale_", "scaler_step", "update")


def _update_rules(events, ctx, direct) -> list[Finding]:
    """One update, after every step: an update before any step of the iteration (the first, or a second
    optimizer's after it) starts the next iteration before that step ran, which then unscales its gradients again
    or by another scale."""
    steps, updates = every(events, "scaler_step"), every(events, "update")
    if steps and not updates and not ctx.get("partial"):  # a step that raised never got to its update
        return [finding("update_missing", steps[-1]["line"])]
    out = []
    if updates and not direct and (not steps or events.index(updates[0]) < events.index(steps[0])):
        out.append(finding("update_before_step", updates[0]["line"]))
    elif updates and not direct and events.index(steps[-1]) > events.index(updates[-1]):
        out.append(
            finding("update_before_step", updates[-1]["line"], key="update_before_step.later", step=steps[-1]["line"])
        )
    if len(updates) > 1 and ctx.get("micro_batches", 1) <= 1:
        out.append(finding("update_more_than_once", updates[0]["line"], n=len(updates)))
    return out


def _direct_step_key(events, direct) -> str | None:
    """After scaler.unscale_ the gradients are no longer multiplied by the scale: say only what is still wrong."""
    unscaled = any(e["ev"] == "unscale_" for e in events[: events.index(direct)])
    return "optimizer_step_direct.unscaled" if unscaled else None


def _unscale_rules(events) -> list[Finding]:
    """unscale_ at most once per optimizer between updates; clipping after an unscale_ of every optimizer that
    owns the clipped parameters: another optimizer's unscale_ leaves these gradients S times too large, so the
    clip compares a scaled norm with max_norm."""
    out, unscaled, scaled_grads = [], {}, False
    for e in events:
        if e["ev"] in BACKWARDS and e.get("scaled"):
            scaled_grads = True
        elif e["ev"] == "unscale_" and e.get("enabled", True):
            opt = e.get("optimizer", 0)
            unscaled[opt] = unscaled.get(opt, 0) + 1
            if unscaled[opt] == 2 and not any(f.id == "unscale_twice" for f in out):
                out.append(finding("unscale_twice", e["line"]))
        elif e["ev"] == "update":
            unscaled = {}
        elif e["ev"] == "clip" and scaled_grads:
            out += _clip_licensed(e, unscaled)
    return out


def _clip_licensed(clip: dict, unscaled: dict) -> list[Finding]:
    if not unscaled:
        return [finding("clip_without_unscale", clip["line"])]
    names = dict(zip(clip.get("optimizers", []), clip.get("optimizer_names") or []))
    missing = [names.get(i, f"optimizer {i}") for i in clip.get("optimizers", []) if i not in unscaled]
    if not missing:
        return []
    return [finding("clip_of_other_optimizer", clip["line"], optimizers=", ".join(missing))]


def deprecated_spelling(events, ctx) -> list[Finding]:
    e = first(events, "autocast_enter", deprecated=True)
    if e:  # the device's own module: torch.cpu.amp.autocast is always a CPU region, torch.cuda.amp's a CUDA one
        name = "torch.cpu.amp.autocast" if e["device_type"] == "cpu" else "torch.cuda.amp.autocast"
        return [finding("deprecated_api", e["line"], severity="info", name=name)]
    return []


def missing_step(events, ctx) -> list[Finding]:
    if ctx.get("partial") or every(events, "optimizer_step") or every(events, "scaler_step"):
        return []
    if ctx["scaler"]:
        return [finding("scaler_step_missing")]
    return [finding("step_missing")]


def zeroed_before_step(events, ctx) -> list[Finding]:
    """A zero_grad between the last backward before a step and that step leaves the step nothing to apply: the
    model does not train, whatever wraps the optimizer (a GradScaler, Accelerate, DDP). A step of another
    optimizer in between (two models, each zeroed after its own step) is not this mistake."""
    last_backward = None
    for i, e in enumerate(events):
        if e["ev"] == "backward":
            last_backward = i
        elif last_backward is not None and (
            e["ev"] == "scaler_step" or (e["ev"] == "optimizer_step" and not e.get("via_scaler"))
        ):
            between = events[last_backward + 1 : i]
            zeroed = next((z for z in between if z["ev"] == "zero_grad"), None)
            if zeroed and not any(b["ev"] in ("scaler_step", "optimizer_step") for b in between):
                return [finding("zero_grad_before_step", zeroed["line"])]
    return [] if ctx.get("partial") else _zeroed_before_next_call(events)


def _zeroed_before_next_call(events) -> list[Finding]:
    """The same mistake across calls: every step comes before the first backward and a zero_grad follows the last
    one, so each call steps on the gradients the previous call already cleared (step, backward, zero_grad)."""
    marks = [i for i, e in enumerate(events) if e["ev"] == "backward"]
    steps = [i for i, e in enumerate(events) if e["ev"] in ("scaler_step", "optimizer_step")]
    zeroed = next((e for e in events[marks[-1] + 1 :] if e["ev"] == "zero_grad"), None) if marks else None
    if zeroed is None or not steps or steps[-1] > marks[0]:
        return []
    key = "zero_grad_before_step.next_call"
    return [
        finding("zero_grad_before_step", zeroed["line"], key=key, fix_key=f"{key}_fix", step=events[steps[0]]["line"])
    ]


def copy_trained(events, ctx) -> list[Finding]:
    """The forward ran a copy of a model the grader gave (the copy carries the grader's forward hook: a
    copy.deepcopy, in prepare or the step) and an optimizer stepped with no gradient on any of its parameters:
    the backward went through the copy's parameters, which no optimizer holds. A copy beside the model (an EMA,
    say) while the optimizer gets its gradients is no mistake."""
    copy = next((e for e in every(events, "forward") if e.get("copy")), None)
    empty = any(e.get("gradients") == 0 for e in events if e["ev"] in ("scaler_step", "optimizer_step"))
    if copy and empty and backwards(events):
        return [finding("model_copy_trained", copy["line"])]
    return []


# Rules for the calls of libraries over torch's AMP (grader/worker/tracing_distributed.py, tracing_accelerate.py,
# tracing_fsdp.py): each
# module has prepare_rules(trace, ctx), for what the learner's prepare did once, and step_rules(events, ctx).
LIBRARY_RULES = (ddp_calls, accelerate_calls, fsdp_calls)


def diagnose(traces: list[dict], ctx: dict) -> list[Finding]:
    """Findings over all traced steps (of every rank), deduplicated by mistake id."""
    found: dict[str, Finding] = {f.id: f for f in ddp_calls.rank_rules(traces)}
    ctx = {**ctx, "prepare_events": [e for t in traces if t.get("phase") == "prepare" for e in t["events"]]}
    for trace in traces:
        if trace.get("phase") == "prepare":
            for f in (f for rules in LIBRARY_RULES for f in rules.prepare_rules(trace, ctx)):
                found.setdefault(f.id, f)
            continue
        events = trace["events"]
        ctx = {**ctx, "partial": trace.get("partial", False)}
        rules = [missing_step, deprecated_spelling, accumulation, zeroed_before_step, copy_trained]
        if ctx["autocast"]:
            rules += [autocast_usage]
            if any(e["ev"] == "autocast_enter" and e["enabled"] for e in events):
                rules += [autocast_scope]
        if ctx["scaler"]:
            rules += [scaler_usage]
        findings = master_weights(trace, ctx) if "param_dtypes" in trace else []
        for rule in rules:
            findings += rule(events, ctx)
        for library in LIBRARY_RULES:
            findings += library.step_rules(events, ctx)
        for f in findings:
            found.setdefault(f.id, f)
    for f in compilation([t for t in traces if t.get("phase") != "prepare"], ctx.get("compiled", [])):
        found.setdefault(f.id, f)
    return [f for f in found.values() if not _consequence(f.id, found)]


# Findings that follow from another one, said once: an optimizer.step() called directly leaves the scaler no
# step of its own (scaler_step_missing where the learner skipped it by hand; update "before" a step that never
# comes), which its own finding explains.
CONSEQUENCES = {"optimizer_step_direct": ("scaler_step_missing", "update_before_step")}


def _consequence(finding_id: str, found: dict) -> bool:
    return any(cause in found and finding_id in follows for cause, follows in CONSEQUENCES.items())


def compilation(traces: list[dict], compiled: list[dict]) -> list[Finding]:
    """What torch.compile did (advice: compiled code that trains right is right): torch.compile called in more
    than one traced step, dynamo compiling again after the first step that compiled (a recompile), and graph
    breaks. `compiled` is dynamo's own counts per step of the whole run (grader/worker/compiling.py)."""
    out = []
    calls = [(t.get("step"), e) for t in traces for e in t["events"] if e["ev"] == "compile"]
    if len({step for step, _ in calls}) > 1:
        out.append(finding("compile_every_step", calls[0][1]["line"], severity="info", steps=len(calls)))
    working = steps_compiling(compiled)
    if len(working) > 1:
        out.append(finding("recompiled", None, severity="info", step=working[1], n=len(working) - 1))
    breaks = sum(c["graph_breaks"] for c in compiled)
    if breaks > 0:
        out.append(finding("graph_breaks", None, severity="info", n=breaks))
    return out


# Mistakes whose line the trace can only guess: it sees the backward calls that ran, not the slice that left a
# micro-batch out. Where the source shows that slice, its line is the one to fix. A slice alone is no mistake
# (DDP's `micro_batches[:-1]` under no_sync(), then the last one), so it never makes a finding by itself.
SOURCE_NAMES_THE_LINE = {"micro_batch_skipped"}
# Read from the source alone, exactly (not a heuristic): said whatever the trace shows, unless a finding of the
# trace already names that line (autocast_wrong_device where the literal is the other device)
SOURCE_ALONE = {"hardcoded_device"}


def merge(found: list[Finding], static: list[Finding], *, traced: bool) -> list[Finding]:
    """The trace decides; the source lends its line numbers. Static-only
    mistakes count only when no step could be traced (it is a heuristic)."""
    by_id = {f.id: f for f in static}
    for f in found:
        if (f.line is None or f.id in SOURCE_NAMES_THE_LINE) and f.id in by_id:
            f.line = by_id[f.id].line
    known, lines = {f.id for f in found}, {f.line for f in found}
    extra = [
        f
        for f in static
        if f.id not in known
        and f.id not in SOURCE_NAMES_THE_LINE
        and (f.severity == "info" or not traced or (f.id in SOURCE_ALONE and f.line not in lines))
    ]
    return found + extra


def check(spec, traces: list[dict], ctx: dict, static_findings: list[Finding]) -> CheckResult:
    ctx = {**ctx, "autocast": spec.autocast, "scaler": spec.scaler}
    findings = merge(diagnose(traces, ctx), static_findings, traced=bool(traces))
    errors = [f for f in findings if f.severity == "error"]
    if not traces:
        return CheckResult(
            "call_order",
            FAIL if errors else "error",
            message_of(errors[0]) if errors else say("call_order.untraced"),
            findings=findings,
            weight=spec.weight,
        )
    compiled = compile_totals(ctx.get("compiled", []))
    if errors:
        n = len(errors)
        message = say("call_order.mistakes", n=n, first=message_of(errors[0])) if n > 1 else message_of(errors[0])
        measured = {"mistakes": [f.id for f in errors], **compiled}
        return CheckResult("call_order", FAIL, message, measured, findings=findings, weight=spec.weight)
    measured = {"mistakes": [], **compiled}
    return CheckResult("call_order", PASS, say("call_order.pass"), measured, findings=findings, weight=spec.weight)


def steps_compiling(compiled: list[dict]) -> list[int]:
    """The steps in which dynamo compiled anything: one for a model compiled once, more for recompiles."""
    return [c["step"] for c in compiled if c["frames"] > 0]


def compile_totals(compiled: list[dict]) -> dict:
    """What torch.compile did over the whole run, for the result document (nothing where nothing compiled)."""
    if not compiled:
        return {}
    return {
        "compiled": {
            "steps_compiling": steps_compiling(compiled),
            "frames": sum(c["frames"] for c in compiled),
            "graphs": sum(c["graphs"] for c in compiled),
            "graph_breaks": sum(c["graph_breaks"] for c in compiled),
        }
    }

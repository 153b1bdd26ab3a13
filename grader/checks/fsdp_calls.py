"""Call-order rules for FSDP2 with a MixedPrecisionPolicy, over the trace of
real calls (grader/worker/tracing_fsdp.py). Most of its mistakes leave the
numbers within a bfloat16 tolerance of the FP32 run (a gradient reduced in
bfloat16, a model sharded as one unit, autocast and a GradScaler on top of the
policy), so these rules read what the learner's prepare and step did: which
modules `fully_shard` got, with which policy, when the optimizer was built,
and whether a gradient's local piece was taken out of its DTensor."""

from __future__ import annotations

from grader.checks.events import every, first
from grader.results import Finding, finding

LOW = ("float16", "bfloat16")


def sharded(prepare_events: list[dict]) -> list[dict]:
    """The fully_shard calls on the lesson's model (its root) or on modules inside it (its blocks)."""
    return [e for e in every(prepare_events, "fully_shard") if e.get("role") in ("root", "block")]


def reduce_dtype(call: dict) -> str | None:
    """The dtype the gradients are reduced in: reduce_dtype, or param_dtype where it is unset."""
    return call.get("reduce_dtype") or call.get("param_dtype")


def prepare_rules(trace, ctx) -> list[Finding]:
    if not ctx.get("fsdp"):
        return []
    events = trace["events"]
    calls = sharded(events)
    root = next((e for e in calls if e["role"] == "root"), None)
    blocks = [e for e in calls if e["role"] == "block"]
    out = _cast(events, calls)
    if not calls:
        return out + [finding("fsdp_not_sharded", None, ranks=ctx.get("ranks", 1))]
    if root is None:
        out.append(finding("fsdp_root_not_sharded", blocks[0]["line"]))
    elif _block_units(blocks) < 2:
        out.append(finding("fsdp_only_root", root["line"]))
    unpolicied = next((e for e in calls if e.get("param_dtype") not in LOW), None)
    if unpolicied:
        out.append(finding("fsdp_no_policy", unpolicied["line"], dtype=ctx["amp_dtype"]))
    other = next((e for e in calls if e.get("param_dtype") in LOW and e["param_dtype"] != ctx.get("amp_dtype")), None)
    if other and ctx.get("amp_dtype") in LOW:  # the policy is the step's mixed precision: its dtype is the lesson's
        key = "fsdp_policy_wrong_dtype.float16" if other["param_dtype"] == "float16" else None
        out.append(
            finding(
                "fsdp_policy_wrong_dtype", other["line"], key=key, dtype=other["param_dtype"], expected=ctx["amp_dtype"]
            )
        )
    low_reduce = next((e for e in calls if reduce_dtype(e) in LOW), None)
    if low_reduce:
        key = None if low_reduce.get("reduce_dtype") else "fsdp_reduce_16bit.unset"
        out.append(finding("fsdp_reduce_16bit", low_reduce["line"], key=key, dtype=reduce_dtype(low_reduce)))
    out += _optimizer_order(events, calls)
    return out


def _block_units(blocks: list[dict]) -> int:
    """FSDP units below the root that hold parameters: a call on a list of blocks makes one unit of them all,
    and a module without parameters (an activation) gathers nothing, so neither splits the model's gathers."""
    singles = [b for b in blocks if b.get("group", 1) == 1 and b.get("params", 1) > 0]
    grouped = {b["line"] for b in blocks if b.get("group", 1) > 1 and b.get("params", 1) > 0}
    return len(singles) + len(grouped)


def _cast(events: list[dict], calls: list[dict]) -> list[Finding]:
    """The model cast to 16-bit in prepare (its weights, the optimizer's, become 16-bit) instead of a policy
    that casts copies for compute."""
    cast = first(events, "cast_model")
    if cast:
        return [finding("fsdp_cast_model", cast["line"], dtypes=cast.get("to", "16-bit"))]
    low = next((e for e in calls if set(e.get("param_dtypes", [])) & set(LOW)), None)
    if low:
        return [finding("fsdp_cast_model", low["line"], dtypes=", ".join(low["param_dtypes"]))]
    return []


def holds_replaced_tensors(prepare_events: list[dict]) -> bool:
    """Whether prepare built an optimizer over the tensors fully_shard replaced (before it, or from a list taken
    before it): then a layer that never trains is the optimizer's doing, whatever its gradients were."""
    calls = sharded(prepare_events)
    return bool(calls) and bool(_optimizer_order(prepare_events, calls))


def _optimizer_order(events: list[dict], calls: list[dict]) -> list[Finding]:
    """An optimizer built before the last fully_shard holds the tensors that fully_shard replaced with DTensor
    shards: they never get a gradient, and the optimizer steps nothing. So does one built after it from a list of
    parameters taken before it, and its message says so: it was not built before."""
    last = events.index(calls[-1])
    early = next((e for e in events[:last] if e["ev"] == "optimizer_built"), None)
    stale = next((e for e in events[last:] if e["ev"] == "optimizer_built" and not e.get("dtensors")), None)
    if early:
        return [finding("fsdp_optimizer_before_shard", early["line"])]
    if stale:  # built after the sharding, from tensors gathered before it
        return [finding("fsdp_optimizer_before_shard", stale["line"], key="fsdp_optimizer_before_shard.stale_list")]
    return []


def step_rules(events, ctx) -> list[Finding]:
    if not ctx.get("fsdp"):
        return []
    calls = sharded(ctx.get("prepare_events", []))
    policy = next((e.get("param_dtype") for e in calls if e.get("param_dtype") in LOW), None)
    out = []
    autocast = next((e for e in every(events, "autocast_enter") if e.get("enabled")), None)
    if autocast and policy:
        out.append(finding("fsdp_autocast_over_policy", autocast["line"], dtype=policy))
    scaled = next((e for e in every(events, "scale") if e.get("enabled")), None)
    if scaled and policy == "bfloat16":
        out.append(finding("fsdp_scaler_bf16", scaled["line"]))
    local = next((e for e in every(events, "to_local") if e.get("grad")), None)
    if local and calls:
        out.append(finding("fsdp_local_grad_norm", local["line"], ranks=ctx.get("ranks", 1)))
    return out

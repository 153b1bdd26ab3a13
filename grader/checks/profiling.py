"""The checks of a profiling lesson: the learner profiles a slow mixed-precision
step the lesson hands out (its starter), names what slows it (`BOTTLENECKS`),
and fixes it. Each check compares the fixed step with the grader's own profile
of the given step, which a process of its own ran from the lesson's code,
never from the learner's (grader/worker/census.py).

- `bottleneck`: the names in BOTTLENECKS, read from the source without running
  it, against the symptoms the grader's profile of the given step shows here.
- `host_syncs`: the host waiting for the device inside the fixed step.
- `matmul_dtypes`: matmuls the fixed step ran in float32 where autocast would
  run them in 16-bit; corroborated by where the weights ended between the given
  step's run and the reference's (both trusted).
- `transfers`: copies between host and device (CUDA only: a CPU has none).
- `step_time`: the fixed step against the given step, timed by the grader
  (CUDA only, where the time means something).

The counts of the fixed step come from the learner's process; what that means
for trust is in docs/authoring.md ("Profiling checks")."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from grader.checks import census_summary, parity
from grader.checks.speedup import measured_speedup
from grader.lesson.check_specs import threshold_for
from grader.results import ERROR, FAIL, NOT_APPLICABLE, PASS, CheckResult, Finding, finding, message_of
from grader.wording.catalog import say
from grader.wording.phrases import amount
from grader.worker import census

CHECK_IDS = ("bottleneck", "host_syncs", "matmul_dtypes", "transfers", "step_time")
SYNC_FINDINGS = {
    "value": "host_sync_value",
    "print": "host_sync_print",
    "host_read": "host_sync_print",
    "data_dependent": "host_sync_data_dependent",
    "op_value": "host_sync_op_value",
    "explicit": "host_sync_explicit",
    "to_host": "host_sync_to_host",
}
DTYPE_FINDINGS = {
    "off": "float32_autocast_disabled",
    "none": "float32_outside_autocast",
    "on": "float32_under_autocast",
}
# Where the weights must have gone, from the given step's run (0) toward the reference's (1), for a fixed step
# that did its matmuls in 16-bit: a real one goes about 100%, one that kept the given step's float32 layers 0%.
TOWARD_FIXED = 0.5


@dataclass
class ProfileEvidence:
    """What the profiling checks look at. `given` is the trusted run of the given step; `census` lists are
    per step {"step", "events"} (grader/worker/census.py)."""

    source: str
    device_type: str
    amp_dtype: str
    census: list[dict]
    given_census: list[dict]
    params: dict | None = None
    given_params: dict | None = None
    reference_params: dict | None = None
    start: dict = field(default_factory=dict)
    describe: object = None
    timing: object = None  # TimingResult of the fixed step against the given step (CUDA)
    update_rtol: float = 0.05
    cuda_only: list = field(
        default_factory=list
    )  # host syncs on branches that run on CUDA only (grader/judge/static.py)
    speed: str = ""  # the kind timed thresholds are looked up by: cuda, cpu_amx or cpu (default: device_type)


def not_applicable(spec, device_kind: str, why: str | None = None) -> CheckResult:
    if why:
        return CheckResult(spec.id, NOT_APPLICABLE, say("speedup.not_applicable_cpu", why=why), weight=spec.weight)
    key = "transfers.not_applicable" if spec.id == "transfers" else "step_time.not_applicable"
    return CheckResult(spec.id, NOT_APPLICABLE, say(key, device=device_kind), weight=spec.weight)


def inapplicable(spec, device_kind: str, speed: str | None = None, why: str | None = None) -> CheckResult | None:
    """`speed`: the kind timed thresholds are looked up by (cpu_amx on a CPU whose 16-bit matmuls are fast)."""
    if spec.id == "transfers" and device_kind != "cuda":
        return not_applicable(spec, device_kind)
    if spec.id == "step_time" and threshold_for(spec.min_speedup, speed or device_kind) is None:
        return not_applicable(spec, device_kind, why)
    return None


def check(spec, ev: ProfileEvidence) -> CheckResult:
    return {
        "bottleneck": bottleneck,
        "host_syncs": host_syncs,
        "matmul_dtypes": matmul_dtypes,
        "transfers": transfers,
        "step_time": step_time,
    }[spec.id](spec, ev)


def _failed(spec, findings: list[Finding], n: int, key: str, measured: dict, threshold: dict | None) -> CheckResult:
    message = message_of(findings[0]) if len(findings) == 1 else say(key, n=n, first=message_of(findings[0]))
    return CheckResult(spec.id, FAIL, message, measured, threshold, findings, weight=spec.weight)


def _steps(ev: ProfileEvidence) -> int:
    return len(census_summary.steady(ev.census))


# -- the answer ---------------------------------------------------------------------------------------------


def answer(source: str, name: str) -> tuple[list[str] | None, int | None, str | None]:
    """(the names, their line, what is wrong) of `NAME = {...}` at module level. Read from the source in the
    grading process, never from the learner's process: it is a declaration, so it must be a literal."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, None, "bottleneck_no_answer"
    found = None
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            found = node
    if found is None:
        return None, None, "bottleneck_no_answer"
    node = found.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("set", "frozenset")
        and len(node.args) <= 1
        and not node.keywords
    ):
        node = node.args[0] if node.args else ast.List(elts=[], ctx=ast.Load())  # set(["host_sync"]), set()
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, found.lineno, "bottleneck_not_literal"
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (set, frozenset, list, tuple, dict)) or not all(isinstance(v, str) for v in value):
        return None, found.lineno, "bottleneck_not_literal"
    return sorted({_name(v) for v in value}), found.lineno, None


def _name(text: str) -> str:
    """'Host sync', 'host-sync' and 'HOST_SYNC' all name host_sync."""
    return "_".join(text.strip().lower().replace("-", " ").split())


def _saw(category: str, given: list[dict], device_type: str) -> object:
    """What the grader's profile of the given step shows for one category, in words."""
    if category == "host_sync":
        events = census_summary.of_kind(given, "sync")
    elif category == "float32_matmul":
        events = census_summary.float32_matmuls(given)
    else:
        events = census_summary.of_kind(given, "copy")
    n = census_summary.symptoms(given, device_type)[category] or 0
    ops = ", ".join(sorted({e["op"] for e in events}))
    lines = ", ".join(str(line) for line in sorted({e["line"] for e in events if e["line"]}))
    return say(f"bottleneck.saw.{category}", n=n, ops=ops, lines=lines or "?")


def bottleneck(spec, ev: ProfileEvidence) -> CheckResult:
    names, line, problem = answer(ev.source, spec.answer)
    shown = census_summary.symptoms(ev.given_census, ev.device_type)
    judged = [c for c in census.CATEGORIES if shown[c] is not None]
    present = [c for c in judged if shown[c]]
    threshold = {"names": present, "judged": judged}
    if problem:
        f = finding(problem, line, name=spec.answer, known=", ".join(census.CATEGORIES))
        return CheckResult(spec.id, FAIL, message_of(f), {"names": None}, threshold, [f], weight=spec.weight)
    findings = [
        finding("bottleneck_unknown", line, name=n, known=", ".join(census.CATEGORIES))
        for n in names
        if n not in census.CATEGORIES
    ]
    findings += [
        finding("bottleneck_missed", line, name=c, answer=spec.answer, what=_saw(c, ev.given_census, ev.device_type))
        for c in present
        if c not in names
    ]
    findings += [
        finding("bottleneck_not_in_profile", line, name=c, answer=spec.answer)
        for c in judged
        if c in names and c not in present
    ]
    notes = [
        finding("bottleneck_unjudged", line, severity="info", name=c, device=ev.device_type)
        for c in names
        if c in census.CATEGORIES and c not in judged
    ]
    measured = {"names": names, "given_per_step": shown}
    if findings:
        return _failed(spec, findings + notes, len(findings), "bottleneck.mistakes", measured, threshold)
    return CheckResult(
        spec.id,
        PASS,
        say("bottleneck.pass", answer=spec.answer, names=", ".join(present)),
        measured,
        threshold,
        notes,
        weight=spec.weight,
    )


# -- the fixed step -----------------------------------------------------------------------------------------


def host_syncs(spec, ev: ProfileEvidence) -> CheckResult:
    """What the profiler counted, plus the syncs of branches that cannot run on this device (read from the
    source; one the census saw at its line is counted once). Each such branch runs every step on CUDA."""
    counted = census_summary.of_kind(ev.census, "sync")
    cuda_only = [f for f in ev.cuda_only if f.line not in {e["line"] for e in counted}]
    worst = census_summary.per_step(ev.census, "sync") + len(cuda_only)
    given = census_summary.per_step(ev.given_census, "sync")
    measured = {"per_step": worst, "given_per_step": given, "steps": _steps(ev), "cuda_only": len(cuda_only)}
    threshold = {"max_per_step": spec.max_per_step}
    if worst <= spec.max_per_step:
        return CheckResult(
            spec.id, PASS, say("host_syncs.pass", n=worst, given=given), measured, threshold, weight=spec.weight
        )
    findings, seen = [], set()
    for e in counted:
        key = SYNC_FINDINGS.get(e["kind"], "host_sync_value")
        if (key, e["line"]) not in seen:
            seen.add((key, e["line"]))
            findings.append(finding(key, e["line"], op=e["op"], n=e["n"], steps=_steps(ev)))
    return _failed(spec, findings + cuda_only, worst, "host_syncs.mistakes", measured, threshold)


def _layer(e: dict, describe) -> object:
    if not e.get("module"):
        return say("matmul.no_module", op=e["op"])
    return describe(e["module"]) if describe else say("layer.module", name=e["module"])


def matmul_dtypes(spec, ev: ProfileEvidence) -> CheckResult:
    fp32 = census_summary.float32_matmuls(ev.census)
    worst = census_summary.per_step(ev.census, "matmul", census_summary.is_float32_matmul)
    total = census_summary.per_step(ev.census, "matmul")
    given = census_summary.symptoms(ev.given_census, ev.device_type)["float32_matmul"]
    measured = {"float32_per_step": worst, "matmuls_per_step": total, "given_float32_per_step": given}
    threshold = {"max_float32_per_step": 0}
    if fp32:
        findings, seen = [], set()
        for e in fp32:
            key = DTYPE_FINDINGS.get(e["autocast"], "float32_under_autocast")
            if (key, e["line"], e.get("module")) not in seen:
                seen.add((key, e["line"], e.get("module")))
                findings.append(
                    finding(key, e["line"], layer=_layer(e, ev.describe), op=e["op"], n=e["n"], steps=_steps(ev))
                )
        return _failed(spec, findings, worst, "matmul_dtypes.mistakes", measured, threshold)
    toward = _toward_fixed(ev)
    if toward is not None:
        measured.update(toward)
        if toward["toward_reference"] < TOWARD_FIXED:
            f = finding("numbers_of_given_step")
            return CheckResult(
                spec.id,
                FAIL,
                say("matmul_dtypes.given_numbers", toward=toward["toward_reference"]),
                measured,
                threshold,
                [f],
                weight=spec.weight,
            )
    if total == 0:
        return CheckResult(spec.id, ERROR, say("matmul_dtypes.none"), measured, threshold, weight=spec.weight)
    return CheckResult(
        spec.id, PASS, say("matmul_dtypes.pass", n=total, dtype=ev.amp_dtype), measured, threshold, weight=spec.weight
    )


def _toward_fixed(ev: ProfileEvidence) -> dict | None:
    """Where the fixed step's weights ended on the line from the given step's run to the reference's. Both runs
    are the grader's own; the given step's float32 matmuls move its weights one way, 16-bit ones the other, and
    a step cannot end where the reference did without rounding like it. Judged only where the two runs are
    apart and the submission ended near them (one far off fails parity instead)."""
    sub, given, ref, start = ev.params, ev.given_params, ev.reference_params, ev.start
    if not (sub and given and ref and start):
        return None
    apart = parity.trajectory_distance(ref, given, given, start)
    near = parity.trajectory_distance(sub, ref, given, start)
    if not apart > 0 or not near <= max(ev.update_rtol, 2 * apart):
        return None
    return {"toward_reference": round(parity.toward(sub, ref, given), 4), "given_vs_reference": round(apart, 6)}


def transfers(spec, ev: ProfileEvidence) -> CheckResult:
    worst = census_summary.per_step(ev.census, "copy")
    given = census_summary.per_step(ev.given_census, "copy")
    measured = {"per_step": worst, "given_per_step": given, "steps": _steps(ev)}
    threshold = {"max_per_step": spec.max_per_step}
    if worst <= spec.max_per_step:
        return CheckResult(
            spec.id, PASS, say("transfers.pass", n=worst, given=given), measured, threshold, weight=spec.weight
        )
    findings, seen = [], set()
    for e in census_summary.of_kind(ev.census, "copy"):
        key = "copy_to_host" if e["dir"] == "d2h" else "copy_to_device"
        if (key, e["line"]) not in seen:
            seen.add((key, e["line"]))
            findings.append(
                finding(
                    key, e["line"], op=e["op"], n=e["n"], steps=_steps(ev), size=amount(e["bytes"] / max(e["n"], 1))
                )
            )
    return _failed(spec, findings, worst, "transfers.mistakes", measured, threshold)


def step_time(spec, ev: ProfileEvidence) -> CheckResult:
    """Only reached where the device has a threshold, so the fixed step was timed against the given one."""
    timing = ev.timing
    need = threshold_for(spec.min_speedup, ev.speed or ev.device_type)
    after_sub, after_given = timing.after_params
    dev, name = parity.worst(parity.update_deviations(after_sub, after_given, ev.start))
    if not dev <= 3 * ev.update_rtol:
        return CheckResult(
            spec.id,
            ERROR,
            say("step_time.timed_params", name=name, dev=dev),
            {"max_update_rel_diff": dev},
            weight=spec.weight,
        )
    est, measured, cores = measured_speedup(timing)
    threshold = {"min_speedup": need}
    text = say("step_time.measured", ratio=est.ratio, low=est.low, high=est.high, rounds=est.rounds)
    if est.low >= need:
        return CheckResult(
            spec.id, PASS, say("speedup.pass", measured=text, need=need), measured, threshold, weight=spec.weight
        )
    parts = [say("speedup.fail", measured=text, need=need), *cores]
    parts += [say("speedup.noisy")] if est.high >= need else []
    return CheckResult(spec.id, FAIL, parts, measured, threshold, weight=spec.weight)


def plot(fixed: list[dict], given_census: list[dict], top_ops: list | None, device_type: str) -> dict:
    """The grader's profile of the given step beside the fixed step's counts, for the web app."""
    return {
        "device": device_type,
        "given": {**census_summary.summary(given_census, device_type), "top_ops": top_ops or []},
        "submission": census_summary.summary(fixed, device_type),
    }

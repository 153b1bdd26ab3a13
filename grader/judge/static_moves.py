"""The order in which a function moves a model to its device, wraps it in DistributedDataParallel and builds its
optimizer, read from the source. The trace sees these calls where they run (grader/checks/ddp_calls.py,
moved_after_wrap); on a CPU a branch written for CUDA never runs (`if device.type == "cuda": model =
DDP(model, device_ids=[device.index])`), so only the source can say what it would do there. These rules read the
order of the calls as written, so grader/judge/unexercised.py reports what they find in code that did not run as a
note, never as a mistake the grading saw."""

from __future__ import annotations

import ast

from grader.judge.static import dotted
from grader.results import Finding, finding

WRAPS = ("DistributedDataParallel", "DDP")
DTYPES = ("float16", "half", "bfloat16", "float32", "float", "float64", "double")


def _moved(call: ast.Call) -> str | None:
    """`.cuda()`, or `.to(device)` (not `.to(torch.bfloat16)`): a move to a device, as the learner spells it."""
    if not isinstance(call.func, ast.Attribute):
        return None
    if call.func.attr == "cuda":
        return ".cuda()"
    if call.func.attr != "to":
        return None
    devices = [a for a in call.args if isinstance(a, ast.Constant) or not _dtype(dotted(a))]
    if any(k.arg == "device" for k in call.keywords) or devices:
        return ".to()"
    return None


def _dtype(name: str) -> bool:
    return name.split(".")[-1] in DTYPES or "dtype" in name


def _receiver(call: ast.Call) -> str | None:
    return (
        call.func.value.id if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) else None
    )


def _is_wrap(call: ast.Call) -> bool:
    return dotted(call.func).split(".")[-1] in WRAPS and bool(call.args)


def _device_ids(call: ast.Call) -> bool:
    """DDP told which GPU it runs on: device_ids given, and not None."""
    return any(
        k.arg == "device_ids" and not (isinstance(k.value, ast.Constant) and k.value.value is None)
        for k in call.keywords
    )


Branches = dict  # id(If) -> "body" or "orelse": the sides of the `if`s a call is under


def _in_order(fn: ast.AST) -> list[tuple[ast.Call, list[str], Branches]]:
    """The function's calls in source order, each with the names its result is bound to (`ddp = DDP(model)`)
    and the branches it is in."""
    bound: dict[int, list[str]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            bound[id(node.value)] = [t.id for t in node.targets if isinstance(t, ast.Name)]
    calls: list[tuple[ast.Call, Branches]] = []

    def visit(node: ast.AST, branches: Branches):
        if isinstance(node, ast.Call):
            calls.append((node, branches))
        for name, value in ast.iter_fields(node):
            side = {**branches, id(node): name} if isinstance(node, ast.If) and name in ("body", "orelse") else branches
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    visit(child, side)

    visit(fn, {})
    ordered = sorted(calls, key=lambda c: (c[0].lineno, c[0].col_offset))
    return [(c, bound.get(id(c), []), branches) for c, branches in ordered]


def _exclusive(a: Branches, b: Branches) -> bool:
    """Two calls on different sides of one `if`: no run makes both."""
    return any(b.get(k, side) != side for k, side in a.items())


def out_of_order(fn: ast.AST, models_on_cpu: bool) -> list[Finding]:
    """In one function: a model moved after DDP wrapped it (wrapped_before_moved, at the move), and, where the
    grader hands the models over on the CPU (`models_on_cpu`: the lesson's workload.move_models is false), DDP
    given device_ids for a parameter of the function not moved before it (wrapped_before_moved.device: on CUDA,
    DDP refuses a module whose parameters are not on its device). A move anywhere earlier in the function counts,
    whatever branch it is in, and so does any call on the model or given it, so the rule never says a model was
    not moved when it may have been."""
    params = {a.arg for a in getattr(getattr(fn, "args", None), "args", [])}
    wrapped: dict[str, Branches] = {}  # name -> where it was wrapped
    moved: set[str] = set()
    out = []
    for call, names, branches in _in_order(fn):
        receiver = _receiver(call)
        if (how := _moved(call)) is not None and receiver is not None:
            if receiver in wrapped and not _exclusive(wrapped[receiver], branches):
                out.append(finding("wrapped_before_moved", call.lineno, call=how))
            moved.update([receiver, *names])
        elif _is_wrap(call):
            inner = call.args[0].id if isinstance(call.args[0], ast.Name) else None
            if inner and models_on_cpu and _device_ids(call) and inner in params and inner not in moved:
                out.append(
                    finding(
                        "wrapped_before_moved",
                        call.lineno,
                        key="wrapped_before_moved.device",
                        device="cpu",
                        expected="cuda",
                    )
                )
            wrapped.update({name: branches for name in [*names, *([inner] if inner else [])]})
        else:  # any other call on the model or given it (a helper, `model.to_empty(...)`) may move it
            moved.update(n for n in [receiver, *(a.id for a in call.args if isinstance(a, ast.Name))] if n)
    return out

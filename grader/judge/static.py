"""Static analysis of the learner's source: it never runs the code. It adds
line numbers to what the trace found and catches mistakes on paths the traced
steps did not take. The trace stays the authority on what really happened."""

from __future__ import annotations

import ast

from grader.results import Finding, finding

DEPRECATED = {
    "torch.cuda.amp.autocast",
    "torch.cuda.amp.GradScaler",
    "torch.cpu.amp.autocast",
    "torch.cuda.amp.custom_fwd",
    "torch.cuda.amp.custom_bwd",
}
LOW_DTYPES = {"float16", "half", "bfloat16"}
AUTOGRAD_GRAD = {"torch.autograd.grad", "autograd.grad"}  # a backward pass too (`.backward` covers the others)


def dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_autocast(call: ast.AST) -> bool:
    return isinstance(call, ast.Call) and dotted(call.func).split(".")[-1] == "autocast"


def _casts_to_16bit(call: ast.Call) -> bool:
    name = dotted(call.func).split(".")[-1]
    if name in ("half", "bfloat16") and not call.args:
        return True
    if name == "to":
        values = list(call.args) + [k.value for k in call.keywords if k.arg == "dtype"]
        return any(dotted(v).split(".")[-1] in LOW_DTYPES for v in values)
    return False


def _drops_micro_batches(node: ast.AST) -> bool:
    """`micro_batches[:-1]`, `micro_batches[1:]`, `range(len(micro_batches) - 1)`: the line that leaves data
    out, which the trace cannot name (it sees only the backward calls that did run)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and dotted(node.value) == "micro_batches":
        return True
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Sub)
        and isinstance(node.left, ast.Call)
        and dotted(node.left.func) == "len"
        and node.left.args
        and dotted(node.left.args[0]) == "micro_batches"
    ):
        return True
    return False


class Visitor(ast.NodeVisitor):
    def __init__(self):
        self.findings: list[Finding] = []
        self._autocast_depth = 0

    def visit_With(self, node: ast.With):
        is_autocast = any(_is_autocast(item.context_expr) for item in node.items)
        self._autocast_depth += is_autocast
        self.generic_visit(node)
        self._autocast_depth -= is_autocast

    def visit_ImportFrom(self, node: ast.ImportFrom):
        if node.module in ("torch.cuda.amp", "torch.cpu.amp"):
            name = f"{node.module}.{node.names[0].name}" if len(node.names) == 1 else f"{node.module}.*"
            self.findings.append(finding("deprecated_api", node.lineno, severity="info", name=name))

    def _dropped_micro_batches(self, node: ast.Subscript | ast.BinOp):
        if _drops_micro_batches(node):
            self.findings.append(finding("micro_batch_skipped", node.lineno, key="micro_batch_skipped.static"))
        self.generic_visit(node)

    visit_Subscript = visit_BinOp = _dropped_micro_batches

    def visit_Call(self, node: ast.Call):
        name = dotted(node.func)
        if name in DEPRECATED:
            self.findings.append(finding("deprecated_api", node.lineno, severity="info", name=name))
        if (name.endswith(".backward") or name in AUTOGRAD_GRAD) and self._autocast_depth:
            self.findings.append(
                finding("backward_inside_autocast", node.lineno, key="backward_inside_autocast.static")
            )
        if _casts_to_16bit(node) and dotted(node.func).startswith("model"):
            self.findings.append(finding("master_weights_16bit", node.lineno, key="master_weights_16bit.static"))
        self.generic_visit(node)


def visited(tree: ast.Module) -> list[Finding]:
    """Every finding of the Visitor's rules in a parsed source, in source order, repeats included."""
    visitor = Visitor()
    visitor.visit(tree)
    return visitor.findings


def analyse(source: str) -> list[Finding]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    seen, out = set(), []
    for f in visited(tree):
        if f.id not in seen:
            seen.add(f.id)
            out.append(f)
    return out


def syntax_error(source: str) -> tuple[str, int | None, str | None, int | None] | None:
    """(message, line, the whole line as written, 1-based column of the caret), or None when `source` parses. The
    line keeps its indentation: an indentation error is in it."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        text = (exc.text or "").rstrip("\r\n") or None
        return f"SyntaxError: {exc.msg}", exc.lineno, text, caret_column(text, exc.offset)
    return None


def caret_column(text: str | None, offset) -> int | None:
    """SyntaxError's offset as a column of `text` (1-based; one past the end where something is missing at the
    end, as a `:`), or None when it does not fall on the line."""
    if text is None or not isinstance(offset, int) or isinstance(offset, bool):
        return None
    return offset if 1 <= offset <= len(text) + 1 else None


# -- host syncs on a CUDA-only branch ------------------------------------------------------------------------
# On a CPU (where most learners and CI grade) `if device_type == "cuda": torch.cuda.synchronize()` never runs,
# and `.cpu()`, `.item()` of a CPU tensor cost nothing, so neither the trace nor the profiler can see what the
# branch would do on a GPU: there the host would wait for the device every step. Only the source can tell.
# A read that runs on this device is the census's to count (grader/worker/census.py); this rule adds the branches
# that cannot run here, whatever the device, so the verdict is the same on CPU and CUDA.
HOST_READS = ("synchronize", "item", "tolist", "cpu", "numpy")


def _mentions_cuda(test: ast.AST) -> bool | None:
    """True when the test holds on CUDA only (its body is the CUDA branch), False when it holds everywhere but
    CUDA (its else is), None when it does not ask about the device."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _mentions_cuda(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        values = [v.value for v in (test.left, test.comparators[0]) if isinstance(v, ast.Constant)]
        if values and values[0] in ("cuda", "cpu"):
            equal = isinstance(test.ops[0], (ast.Eq, ast.Is, ast.In))
            return equal == (values[0] == "cuda")
        return None
    if isinstance(test, ast.Call) and dotted(test.func) in ("torch.cuda.is_available", "cuda.is_available"):
        return True
    if isinstance(test, ast.Attribute) and test.attr == "is_cuda":
        return True
    return None


def cuda_only_side(test: ast.AST) -> bool | None:
    """As _mentions_cuda, where an `and` holds on CUDA only when one of its terms does (`if x.is_cuda and
    verbose:`). Not for the host_syncs check, which says "every step": such a branch may run on some steps only."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return True if any(cuda_only_side(v) is True for v in test.values) else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = cuda_only_side(test.operand)
        return None if inner is None else not inner
    return _mentions_cuda(test)


VALUE_READS = ("float", "int", "bool")  # float(t): a host read where t is a tensor (the source cannot tell)


def host_read(call: ast.Call, values: bool = False) -> str | None:
    """The host read a call makes on a GPU tensor (or stream, or event), by the name it is called with; with
    `values`, also float(x), int(x) and bool(x) of something that is not a literal."""
    name = dotted(call.func).split(".")[-1] if isinstance(call.func, ast.Attribute) else ""
    if name in HOST_READS and not (name == "synchronize" and call.args):
        return name
    if name == "to" and any(isinstance(a, ast.Constant) and a.value == "cpu" for a in call.args):
        return "to"
    if values and isinstance(call.func, ast.Name) and call.func.id in VALUE_READS and len(call.args) == 1:
        return None if isinstance(call.args[0], ast.Constant) else call.func.id
    return None


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _bound_to(tree: ast.Module, name: str) -> set[str]:
    """Functions put in the entrypoint's place: `train_step = wrap`, `globals()["train_step"] = wrap` (how a
    decorator or grader/authoring/mutants.py's wrapper rebinds it). The step is whatever the name is bound to."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for t in node.targets:
                if (isinstance(t, ast.Name) and t.id == name) or (
                    isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == name
                ):
                    out.add(node.value.id)
    return out


def step_functions(tree: ast.Module, entrypoint: str) -> list[ast.AST]:
    """The step function, what is bound in its place, and the functions of this file they call (transitively)."""
    functions = _functions(tree)
    todo, seen = [entrypoint, *_bound_to(tree, entrypoint)], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        for node in ast.walk(functions[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                todo.append(node.func.id)
    return [functions[n] for n in seen]


def cuda_only_host_syncs(source: str, entrypoint: str, *, note: bool = False) -> list[Finding]:
    """`host_sync_cuda_only` at each host read or synchronize in a branch of the step that runs on CUDA only.
    `note`: as an info-level note, for lessons that do not grade host syncs (a `loss.item()` for logging costs
    time on a GPU, but it is not a mistake of mixed precision)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return host_syncs_in(tree, entrypoint, note=note)


def host_syncs_in(tree: ast.Module, entrypoint: str, *, note: bool = False) -> list[Finding]:
    """cuda_only_host_syncs of a parsed source."""
    out, lines = [], set()

    def visit(node: ast.AST, cuda_only: bool):
        if isinstance(node, ast.If) and (side := _mentions_cuda(node.test)) is not None:
            for child in node.body:
                visit(child, cuda_only or side)
            for child in node.orelse:
                visit(child, cuda_only or not side)
            return
        if cuda_only and isinstance(node, ast.Call) and host_read(node) and node.lineno not in lines:
            lines.add(node.lineno)
            out.append(
                finding(
                    "host_sync_cuda_only",
                    node.lineno,
                    severity="info" if note else "error",
                    key="host_sync_cuda_only.note" if note else None,
                    call=f"{dotted(node.func)}()",
                )
            )
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, cuda_only)

    for function in step_functions(tree, entrypoint):
        for statement in function.body:
            visit(statement, False)
    return sorted(out, key=lambda f: f.line)


# The calls whose device must follow the device the grader gives: (the name the call ends with, the variant)
DEVICE_CALLS = {"autocast": "autocast", "GradScaler": "scaler", "init_device_mesh": "mesh"}


def _device_literal(call: ast.Call) -> str | None:
    """The device a call is given as a string literal ("cpu", "cuda", "cuda:0"), where it is one."""
    given = call.args[:1] + [k.value for k in call.keywords if k.arg in ("device_type", "device")]
    for node in given:
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.split(":")[0] in ("cpu", "cuda")
        ):
            return node.value
    return None


def _turns_off(call: ast.Call) -> bool:
    """An autocast(enabled=False): on another device it fails the other way, leaving autocast on, not off."""
    return any(
        k.arg == "enabled" and isinstance(k.value, ast.Constant) and k.value.value is False for k in call.keywords
    )


def hardcoded_devices(source: str) -> list[Finding]:
    """`hardcoded_device` at each autocast, GradScaler or init_device_mesh given its device as a literal (and each
    torchao Float8LinearConfig told emulate=True, which is the CPU's setting) outside
    a branch that tests the device: such code is right on one kind of device only, and the grading device cannot
    tell (a CPU grading passes `torch.autocast("cpu")`, a GPU grading would not), so it is named everywhere."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []

    def visit(node: ast.AST, tested: bool):
        if isinstance(node, ast.If) and _mentions_cuda(node.test) is not None:
            tested = True
        if isinstance(node, ast.Call) and not tested:
            variant = DEVICE_CALLS.get(dotted(node.func).split(".")[-1])
            if variant and (device := _device_literal(node)) is not None:
                variant += "_off" if variant == "autocast" and _turns_off(node) else ""
                out.append(finding("hardcoded_device", node.lineno, key=f"hardcoded_device.{variant}", device=device))
            if dotted(node.func).split(".")[-1] == "Float8LinearConfig" and any(
                k.arg == "emulate" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords
            ):  # emulated FP8 on a GPU: float32 matmuls of FP8-rounded numbers, no FP8 kernel, no speedup
                out.append(finding("hardcoded_device", node.lineno, key="hardcoded_device.emulate", device="cpu"))
        for child in ast.iter_child_nodes(node):
            visit(child, tested)

    visit(tree, False)
    return out

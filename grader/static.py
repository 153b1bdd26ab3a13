"""Static analysis of the learner's source: it never runs the code. It adds
line numbers to what the trace found and catches mistakes on paths the traced
steps did not take. The trace stays the authority on what really happened."""

from __future__ import annotations

import ast

from grader.messages import finding
from grader.results import Finding

DEPRECATED = {"torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler", "torch.cpu.amp.autocast",
              "torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd"}
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
            self.findings.append(finding("deprecated_api", node.lineno, severity="info"))

    def visit_Call(self, node: ast.Call):
        name = dotted(node.func)
        if name in DEPRECATED:
            self.findings.append(finding("deprecated_api", node.lineno, severity="info"))
        if (name.endswith(".backward") or name in AUTOGRAD_GRAD) and self._autocast_depth:
            self.findings.append(finding("backward_inside_autocast", node.lineno, key="backward_inside_autocast.static"))
        if _casts_to_16bit(node) and dotted(node.func).startswith("model"):
            self.findings.append(finding("master_weights_16bit", node.lineno, key="master_weights_16bit.static"))
        self.generic_visit(node)


def analyse(source: str) -> list[Finding]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    visitor = Visitor()
    visitor.visit(tree)
    seen, out = set(), []
    for f in visitor.findings:
        if f.id not in seen:
            seen.add(f.id)
            out.append(f)
    return out


def syntax_error(source: str) -> tuple[str, int | None, str | None] | None:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg}", exc.lineno, (exc.text or "").rstrip() or None
    return None

"""The learner's lines that never ran while the grader watched, said beside the verdict. A CPU grading runs
bfloat16 and never takes a branch written for CUDA or float16: a mistake there (float16 without a scaler, a
host sync inside `if x.is_cuda`) cannot show in any check, so a pass must not be silent about it. The worker
reports the lines that ran (grader/worker/lines_run.py); this module reads the learner's source to find the
statements that did not, groups them by the `if` that skipped them and words one note per group, naming the
condition where the code states one.

Only statements that always produce a line event when they run are judged (not `pass`, `global`, docstrings or
other constant expressions, which compile to nothing), so a note never names a line that ran."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from grader.judge import static_moves
from grader.judge.static import (
    VALUE_READS,
    cuda_only_side,
    dotted,
    host_read,
    host_syncs_in,
    step_functions,
    visited,
)
from grader.results import Finding, finding, message_of

MAX_NOTES = 6  # a verdict names at most this many skipped blocks; the rest are counted in the last note
MAX_LINES_RUN = 20_000


def lines_run(reply) -> set[int]:
    """The worker's list of line numbers, rebuilt as plain bounded ints (a malformed one is a protocol error,
    raised as TypeError inside drive's malformed_is_protocol)."""
    if reply is None:
        return set()
    if not isinstance(reply, list) or len(reply) > MAX_LINES_RUN:
        raise TypeError("lines_run")
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 < n < 10**7 for n in reply):
        raise TypeError("lines_run")
    return set(reply)


def merge_lines(known: set[int] | None, reply) -> set[int] | None:
    """The lines known to have run, with one traced step's reply. An empty list from a step that ran is the
    worker saying it lost count (the learner's code set a trace function of its own): unknown from then on."""
    if known is None or reply is None:
        return known
    got = lines_run(reply)
    return known | got if got else None


@dataclass
class Skipped:
    """A run of statements that never ran, under one branch."""

    first: int
    last: int
    function: str
    condition: str | None  # the source of the `if` test that decides the branch, where there is one
    negated: bool  # the statements are in that `if`'s else branch
    whole_function: bool = False
    node: ast.AST | None = field(default=None, compare=False, repr=False)  # the function they belong to
    test: ast.AST | None = field(default=None, compare=False, repr=False)  # the `if` test, where there is one


def _judged(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Pass, ast.Global, ast.Nonlocal, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    return not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


class _Walker:
    def __init__(self, source: str, ran: set[int]):
        self.source, self.ran = source, ran
        self.skipped: list[Skipped] = []
        self.fn = None  # the function being walked

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        body_lines = [s.lineno for s in ast.walk(fn) if isinstance(s, ast.stmt) and s is not fn and _judged(s)]
        if not body_lines:
            return
        if not any(line in self.ran for line in _own_lines(fn)):
            last = max(getattr(fn, "end_lineno", fn.lineno) or fn.lineno, fn.lineno)
            self.skipped.append(Skipped(fn.lineno, last, fn.name, None, False, whole_function=True, node=fn))
            return
        self.fn = fn
        self.block(fn.body, fn.name, None, False)

    def block(self, body: list[ast.stmt], function: str, condition: ast.AST | None, negated: bool) -> None:
        """The statements of one block that did not run, as runs of consecutive statements."""
        run: list[ast.stmt] = []
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._close(run, function, condition, negated)
                run = []
                continue
            if _judged(stmt) and not self._ran(stmt):
                run.append(stmt)
                continue
            self._close(run, function, condition, negated)
            run = []
            self.nested(stmt, function)
        self._close(run, function, condition, negated)

    def nested(self, stmt: ast.stmt, function: str) -> None:
        """The blocks inside a statement that ran (or that compiles to nothing)."""
        if isinstance(stmt, ast.If):
            self.block(stmt.body, function, stmt.test, False)
            if stmt.orelse:
                self.block(stmt.orelse, function, stmt.test, True)
            return
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                self.block(inner, function, None, False)
        for handler in getattr(stmt, "handlers", []) or []:
            self.block(handler.body, function, None, False)
        for case in getattr(stmt, "cases", []) or []:
            self.block(case.body, function, None, False)

    def _ran(self, stmt: ast.stmt) -> bool:
        """A simple statement ran where any of its lines did (a multi-line one may report only a later line);
        a compound one where its header or anything inside it did (`try:` and `while True:` report no line)."""
        inner = [child.lineno for child in ast.walk(stmt) if isinstance(child, ast.stmt) and child is not stmt]
        if inner:
            return stmt.lineno in self.ran or any(line in self.ran for line in inner)
        return any(line in self.ran for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))

    def _close(self, run: list[ast.stmt], function: str, test: ast.AST | None, negated: bool) -> None:
        if run:
            last = max((s.end_lineno or s.lineno) for s in run)
            condition = ast.get_source_segment(self.source, test) if test is not None else None
            self.skipped.append(Skipped(run[0].lineno, last, function, condition, negated, node=self.fn, test=test))


def _own_lines(fn) -> list[int]:
    """The lines of a function's own statements, not those of functions defined inside it."""
    out, todo = [], list(fn.body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        out.append(stmt.lineno)
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                todo.append(child)
            elif isinstance(child, (ast.excepthandler, ast.match_case)):
                todo.extend(child.body)
    return out


def skipped_blocks(source: str, ran: set[int]) -> list[Skipped]:
    """Every block of the learner's functions that did not run, in source order. Module-level code runs when
    the module loads and is not judged."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return _skipped(tree, source, ran)


def _skipped(tree: ast.Module, source: str, ran: set[int]) -> list[Skipped]:
    walker = _Walker(source, ran)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            walker.function(node)
    return sorted(walker.skipped, key=lambda s: s.first)


FLOAT16 = ("torch.float16", "torch.half", "float16", "half")


def _float16_mistakes(tree: ast.Module, block: Skipped) -> list[tuple[int, str]]:
    """What a float16 branch that did not run would do wrong, read from its source: a backward of a loss the
    scaler did not scale, or scaler.step in a file that never calls scaler.update."""
    fn = block.node
    inside = [n for n in ast.walk(fn) if block.first <= getattr(n, "lineno", 0) <= block.last]
    names = {dotted(n) for n in inside if isinstance(n, ast.Attribute)} | {block.condition or ""}
    if not any(any(f in name for f in FLOAT16) for name in names):
        return []
    calls = [n for n in inside if isinstance(n, ast.Call)]
    scaled_names = {  # `scaled = scaler.scale(loss)`: scaled.backward() is a scaled backward
        t.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and dotted(n.value.func).endswith(".scale")
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    updates = any(  # anywhere in the file: the update may be in a helper the step calls
        isinstance(n, ast.Call) and dotted(n.func).endswith(".update") and "scal" in dotted(n.func)
        for n in ast.walk(tree)
    )
    out = []
    for call in calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "backward" and not call.args:  # tensor.backward()
            # a scaled loss anywhere in what is back-propagated (`scaler.scale(loss).div(n)`): not said unscaled,
            # since a note must never be false (the trace judges the mix where it runs)
            scaled = any(
                (isinstance(n, ast.Call) and dotted(n.func).endswith(".scale"))
                or (isinstance(n, ast.Name) and n.id in scaled_names)
                for n in ast.walk(func.value)
            )
            if not scaled:
                out.append((call.lineno, "unscaled"))
        if dotted(func).endswith(".step") and "scal" in dotted(func) and not updates:
            out.append((call.lineno, "no_update"))
    return out


def _would(tree: ast.Module, blocks: list[Skipped], step: str, given_on_cpu: str | None) -> list[Finding]:
    """The static rules (grader/judge/static.py, static_moves.py) and the float16 ones above, applied to the code
    that did not run: notes of what it would do where it runs, said "on CUDA" where its `if` runs it on CUDA only.
    `step`: the lesson's step function, whose CUDA-only branches are read for host syncs."""
    found = visited(tree)
    functions = {b.node for b in blocks} - {None}
    moves = {id(fn): static_moves.out_of_order(fn, models_on_cpu=fn.name == given_on_cpu) for fn in functions}
    steps = {id(fn) for fn in step_functions(tree, step)}
    said = {f.line for f in host_syncs_in(tree, step)}  # already a note or a finding of its own
    out = []
    for b in blocks:
        key = "not_exercised.would_cuda" if _cuda_only(b) else "not_exercised.would"
        for f in found + moves.get(id(b.node), []):
            if f.severity != "info" and f.line is not None and b.first <= f.line <= b.last:
                out.append(finding("not_exercised", f.line, severity="info", key=key, detail=message_of(f)))
        if id(b.node) in steps and _cuda_only(b):
            out += _cuda_syncs(b, said)
        for line, what in _float16_mistakes(tree, b):
            out.append(finding("not_exercised", line, severity="info", key=f"not_exercised.{what}"))
    return out


def _cuda_only(b: Skipped) -> bool:
    """Whether the block runs on CUDA only, as its `if` reads (static.cuda_only_side), a test that is a name
    assigned once in the function read as what was assigned (`timed = inputs.is_cuda and TIMING`)."""
    test = b.test
    if isinstance(test, ast.Name) and b.node is not None:
        values = [  # every binding of the name: a parameter, a loop or `with` target counts as one of unknown value
            getattr(n, "value", None)
            for n in ast.walk(b.node)
            if (isinstance(n, ast.arg) and n.arg == test.id)
            or any(isinstance(t, ast.Name) and t.id == test.id for t in _targets(n))
        ]
        test = values[0] if len(values) == 1 and values[0] is not None else test
    side = cuda_only_side(test) if test is not None else None
    return side is not None and side != b.negated


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in ast.walk(target)]
    if isinstance(node, ast.withitem):
        return list(ast.walk(node.optional_vars)) if node.optional_vars is not None else []
    target = getattr(node, "target", None)  # AnnAssign, AugAssign, NamedExpr, For, comprehension
    return list(ast.walk(target)) if isinstance(target, ast.AST) else []


def _cuda_syncs(b: Skipped, said: set[int]) -> list[Finding]:
    """A host read or synchronize in a CUDA-only block of the step that did not run (and that the step's own
    rule, static.cuda_only_host_syncs, did not already name): on CUDA the host would wait there for the GPU."""
    out, lines = [], set(said)
    for node in ast.walk(b.node):
        if not (isinstance(node, ast.Call) and b.first <= node.lineno <= b.last) or node.lineno in lines:
            continue
        if (read := host_read(node, values=True)) is not None:
            lines.add(node.lineno)
            key = "not_exercised.cuda_value" if read in VALUE_READS else "not_exercised.cuda_sync"
            call = f"{dotted(node.func)}()"
            out.append(finding("not_exercised", node.lineno, severity="info", key=key, call=call))
    return sorted(out, key=lambda f: f.line)


def notes(
    source: str,
    ran: set[int] | None,
    device: str,
    amp_dtype: str,
    step: str = "train_step",
    given_on_cpu: str | None = None,
) -> list[Finding]:
    """One info finding per skipped block (at most MAX_NOTES), at its first line, and what the static rules
    find inside those blocks (`step`: the lesson's step function; `given_on_cpu`: the function the grader hands
    the models to on the CPU, the lesson's prepare where the learner moves them)."""
    if not ran:
        return []  # nothing was watched (a worker that does not report lines): say nothing rather than guess
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    blocks = _skipped(tree, source, ran)
    shown = blocks if len(blocks) <= MAX_NOTES else blocks[: MAX_NOTES - 1]
    out = []
    for b in shown:
        lines = str(b.first) if b.first == b.last else f"{b.first}-{b.last}"
        key = "not_exercised.function" if b.whole_function else "not_exercised"
        if b.condition is not None:
            key += ".else" if b.negated else ".if"
        out.append(
            finding(
                "not_exercised",
                b.first,
                severity="info",
                key=key,
                lines=lines,
                n=b.last - b.first + 1,
                function=b.function,
                condition=(b.condition or "")[:120],
                device=device,
                dtype=amp_dtype,
            )
        )
    if len(shown) < len(blocks):
        rest = blocks[len(shown)]
        out.append(
            finding("not_exercised", rest.first, severity="info", key="not_exercised.more", n=len(blocks) - len(shown))
        )
    return out + _would(tree, blocks, step, given_on_cpu)

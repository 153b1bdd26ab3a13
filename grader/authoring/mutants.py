"""Mutants: wrong versions of a lesson's reference that its checks must fail.

A check that never fails proves nothing. `grader validate` makes each mutant
from the lesson's own reference by wrapping its entrypoint (the reference's
source is kept, and a few lines appended patch the step's objects around each
call), grades it like any submission and counts the mutants that failed. The
mutants are generic (a frozen block, a doubled learning rate, a scaled
gradient, a dropped micro-batch, ...), so an instructor's new lesson is
checked for power without writing any.

A mutant that cannot be caught on a given lesson (an "equivalent mutant",
e.g. a scaled gradient under Adam) is skipped with a reason in the lesson's
`mutants.skip`."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from grader import runner
from grader.judge.static import dotted
from grader.lesson.schema import Exercise
from grader.results import FAIL, PASS, GradingResult

CLIP_FUNCTIONS = ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm")


def calls(source: str, names: tuple[str, ...]) -> bool:
    """Whether the source calls one of `names` (as a bare name or an attribute)."""
    return any(
        isinstance(node, ast.Call) and dotted(node.func).split(".")[-1] in names for node in ast.walk(ast.parse(source))
    )


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str
    applies: Callable[[Exercise], bool]
    before: str  # runs before each call of the entrypoint; `a` maps parameter names to arguments, `s` is state
    after: str = ""  # runs after each call (also when it raised)
    args: str = ""  # an expression that replaces the positional arguments, e.g. with a micro-batch dropped
    over: str | None = None  # "model", "optimizer" or "scaler": one mutant per such argument, which the code calls T
    target: str | None = None  # the argument this instance changes
    devices: tuple[str, ...] = ("cpu", "cuda")  # where what it changes can be seen at all


def _has(kind: str) -> Callable[[Exercise], bool]:
    return lambda ex: kind in argument_kinds(ex).values()


def _unscales_and_clips_several(exercise: Exercise) -> bool:
    """A step with two optimizers or more that unscales before it clips: which optimizer is unscaled matters."""
    optimizers = sum(kind == "optimizer" for kind in argument_kinds(exercise).values())
    return optimizers > 1 and calls(exercise.reference, ("unscale_",)) and calls(exercise.reference, CLIP_FUNCTIONS)


def argument_kinds(exercise: Exercise) -> dict[str, str]:
    """Entrypoint parameter -> model, optimizer, scaler, data, ... (a lesson's setup code is run to find out)."""
    if exercise.workload.setup is None:
        known = {"model": "model", "optimizer": "optimizer", "scaler": "scaler"}
        return {p: known.get(p, "data") for p in exercise.entrypoint.params}
    from grader.worker import workload

    kinds = workload.describe_setup(exercise.workload.model_dump())
    return {p: ("scaler" if p == "scaler" else kinds.get(p, "data")) for p in exercise.entrypoint.params}


MUTANTS = [
    Mutant(
        "no_step",
        "the optimizer never updates the weights (optimizer.step does nothing)",
        _has("optimizer"),
        "T.step = lambda *x, **k: None",
        "del T.step",
        over="optimizer",
    ),
    Mutant(
        "frozen_block",
        "the first block with parameters never trains (requires_grad is off)",
        _has("model"),
        "blocks = [list(m.parameters()) for m in unwrapped(T).children()]\n"
        "s['frozen'] = next((b for b in blocks if b), list(T.parameters())[:1])\n"
        "for p in s['frozen']: p.requires_grad_(False)",
        "for p in s['frozen']: p.requires_grad_(True)",
        over="model",
    ),
    Mutant(
        "lr_doubled",
        "the learning rate is twice what the lesson sets",
        _has("optimizer"),
        "for g in T.param_groups: g['lr'] *= 2",
        "for g in T.param_groups: g['lr'] /= 2",
        over="optimizer",
    ),
    Mutant(
        "grad_scaled",
        "one parameter's gradient is doubled right before the optimizer step",
        _has("optimizer"),
        "first = next(p for g in T.param_groups for p in g['params'])\n"
        "def double(opt, x, k):\n"
        "    if first.grad is not None: first.grad.mul_(2)\n"
        "s['hook'] = unwrapped(T).register_step_pre_hook(double)",
        "s['hook'].remove()",
        over="optimizer",
    ),
    Mutant(
        "no_clip",
        "gradient clipping is removed (the clipping functions never clip)",
        lambda ex: calls(ex.reference, CLIP_FUNCTIONS),
        "import torch.nn.utils as U, torch.nn.utils.clip_grad as C\n"
        "s['orig'] = {n: getattr(C, n) for n in CLIP_NAMES if hasattr(C, n)}\n"
        "def loose(f, n):\n"
        "    def clip(params, *x, **k):\n"
        "        if n == 'clip_grad_value_': return f(params, float('inf'))\n"
        "        return f(params, float('inf'), *x[1:], **{q: v for q, v in k.items() if q != 'max_norm'})\n"
        "    return clip\n"
        "s['new'] = {n: loose(f, n) for n, f in s['orig'].items()}\n"
        "for n, f in s['new'].items():\n"
        "    setattr(C, n, f); setattr(U, n, f)\n"
        "    for g, v in list(G.items()):\n"
        "        if v is s['orig'][n]: G[g] = f",
        "for n, f in s['orig'].items():\n"
        "    setattr(C, n, f); setattr(U, n, f)\n"
        "    for g, v in list(G.items()):\n"
        "        if v is s['new'][n]: G[g] = f",
    ),
    Mutant(
        "skip_update",
        "scaler.update() is never run",
        _has("scaler"),
        "T.update = lambda *x, **k: None",
        "del T.update",
        over="scaler",
    ),
    Mutant(
        "step_bypasses_scaler",
        "scaler.step(optimizer) calls optimizer.step() without checking for inf/NaN",
        _has("scaler"),
        "T.step = lambda opt, *x, **k: opt.step()",
        "del T.step",
        over="scaler",
    ),
    # After the overflow the grader forces inside the window: what only a scale that changed can show.
    Mutant(
        "grads_kept_after_overflow",
        "once a step overflows, this optimizer's gradients are never cleared again "
        "(zero_grad does nothing while they hold an inf)",
        lambda ex: ex.check("overflow") is not None and _has("optimizer")(ex),
        "import torch\n"
        "s['zero_grad'] = T.zero_grad\n"
        "def kept(*x, **k):\n"
        "    if any(p.grad is not None and not bool(torch.isfinite(p.grad).all())\n"
        "           for g in T.param_groups for p in g['params']): return None\n"
        "    return s['zero_grad'](*x, **k)\n"
        "T.zero_grad = kept",
        "del T.zero_grad",
        over="optimizer",
    ),
    Mutant(
        "scale_hard_coded",
        "a term uses the scale of the first step instead of scaler.get_scale() (a constant where the scale changes)",
        lambda ex: _has("scaler")(ex) and calls(ex.reference, ("get_scale",)),
        "S.setdefault('first', T.get_scale())\nT.get_scale = lambda: S['first']",
        "del T.get_scale",
        over="scaler",
    ),
    Mutant(
        "micro_batch_dropped",
        "the last micro-batch of each step is left out",
        lambda ex: "micro_batches" in ex.entrypoint.params,
        "",
        "",
        "[v[:-1] if n == 'micro_batches' else v for n, v in zip(PARAMS, args)]",
    ),
    Mutant(
        "one_rank_no_step",
        "rank 1's optimizer never steps; the other ranks' do",
        lambda ex: ex.workload.ranks > 1 and _has("optimizer")(ex),
        "import torch.distributed as D\nif D.get_rank() == 1: T.step = lambda *x, **k: None",
        "if D.get_rank() == 1: del T.step",
        over="optimizer",
    ),
    Mutant(
        "no_allreduce",
        "the gradients are never averaged across the ranks (every backward as if in DDP's no_sync(), or after "
        "FSDP2's set_requires_gradient_sync(False))",
        lambda ex: ex.workload.ranks > 1 and _has("model")(ex),
        "s['sync'] = getattr(T, 'require_backward_grad_sync', None)\n"
        "if s['sync'] is not None: T.require_backward_grad_sync = False\n"
        "if hasattr(T, 'set_requires_gradient_sync'): T.set_requires_gradient_sync(False)",
        "if s['sync'] is not None: T.require_backward_grad_sync = s['sync']\n"
        "if hasattr(T, 'set_requires_gradient_sync'): T.set_requires_gradient_sync(True)",
        over="model",
    ),
    Mutant(
        "unscale_wrong_optimizer",
        "scaler.unscale_(optimizer) unscales another of the step's optimizers, so "
        "the clip that follows sees gradients still multiplied by the scale",
        _unscales_and_clips_several,
        "import sys, torch\n"
        "s['opts'] = [v for v in a.values() if isinstance(v, torch.optim.Optimizer)]\n"
        "def other(opt, _u=type(T).unscale_):\n"
        "    if sys._getframe(1).f_globals is not G:  # scaler.step's own unscale_ of its optimizer\n"
        "        return _u(T, opt)\n"
        "    return _u(T, next((o for o in s['opts'] if o is not opt and o is not unwrapped(opt)), opt))\n"
        "T.unscale_ = other",
        "del T.unscale_",
        over="scaler",
    ),
    Mutant(
        "decoy_wrap",
        "the step trains the model inside DistributedDataParallel (model.module), while a "
        "throw-away DDP module runs forward and backward beside it",
        lambda ex: ex.workload.ranks > 1 and _has("model")(ex),
        "import torch\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "s['m'] = getattr(T, 'module', T)\n"
        "device = next(s['m'].parameters()).device\n"
        "if 'decoy' not in S: S['decoy'] = DDP(torch.nn.Linear(1, 1).to(device))\n"
        "def beside(module, args, out, _d=S['decoy'], _x=torch.zeros(1, 1, device=device)):\n"
        "    return out + 0.0 * _d(_x).sum()\n"
        "s['hook'] = s['m'].register_forward_hook(beside)\n"
        "s['m'].no_sync = S['decoy'].no_sync",
        "s['hook'].remove()\ndel s['m'].no_sync",
        "[getattr(v, 'module', v) if v is T else v for v in args]",
        over="model",
    ),
    Mutant(
        "backward_under_autocast",
        "the whole step, backward included, runs inside one autocast region",
        lambda ex: bool(getattr(ex.check("call_order"), "autocast", False)),
        "import torch\n"
        "model = next(v for v in a.values() if isinstance(v, torch.nn.Module))\n"
        "device = a.get('device_type') or next(model.parameters()).device.type\n"
        "low = torch.bfloat16 if device == 'cpu' or torch.cuda.is_bf16_supported() else torch.float16\n"
        "s['region'] = torch.autocast(device, dtype=a.get('amp_dtype') or low)\n"
        "s['region'].__enter__()",
        "s['region'].__exit__(None, None, None)",
    ),
    Mutant(
        "outputs_kept",
        "every block's output is appended to a list that lives across steps",
        lambda ex: ex.check("memory") is not None and _has("model")(ex),
        "if 'hooks' not in S:\n"
        "    S['kept'] = []\n"
        "    S['hooks'] = [m.register_forward_hook(lambda mod, i, o: S['kept'].append(o))"
        " for m in T.children()]",
        over="model",
    ),
    # A profiling lesson's point: each slowdown of its given step, put back into the fixed step.
    Mutant(
        "sync_back",
        "the step reads a value on the host again, every step (like loss.item())",
        lambda ex: ex.check("host_syncs") is not None and _has("model")(ex),
        "",
        "float(next(T.parameters()).detach().sum())",
        over="model",
    ),
    Mutant(
        "cuda_sync",
        "the step reads a value on the host on CUDA only (under `if ... == 'cuda':`), which a "
        "CPU never runs: only the source shows it there",
        lambda ex: ex.check("host_syncs") is not None and _has("model")(ex),
        "",
        "if next(T.parameters()).device.type == 'cuda':\n    next(T.parameters()).detach().sum().item()",
        over="model",
    ),
    Mutant(
        "float32_back",
        "a layer runs in float32 again: autocast is turned off around it and its input cast",
        lambda ex: ex.check("matmul_dtypes") is not None and _has("model")(ex),
        "import torch\n"
        "s['m'] = next(m for m in T.modules() if isinstance(m, torch.nn.Linear))\n"
        "def fp32(x, _f=s['m'].forward, _d=next(T.parameters()).device.type):\n"
        "    with torch.autocast(_d, enabled=False):\n"
        "        return _f(x.float())\n"
        "s['m'].forward = fp32",
        "del s['m'].forward",
        over="model",
    ),
    Mutant(
        "copy_back",
        "a constant is made on the host and copied to the device every step",
        lambda ex: ex.check("transfers") is not None and _has("model")(ex),
        "import torch\ntorch.ones(64).to(next(T.parameters()).device)",
        over="model",
        devices=("cuda",),
    ),
]


def _indent(code: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in code.splitlines()) if code.strip() else " " * spaces + "pass"


def source(exercise: Exercise, mutant: Mutant) -> str:
    """The reference with its entrypoint wrapped. `S` is state shared by all calls, `s` per call."""
    ep = exercise.entrypoint
    return f"""{exercise.reference.rstrip()}


# ---- mutant {mutant.name!r} generated by grader.authoring.mutants: {mutant.description} ----
def _amp_dojo_mutant():
    import functools
    G = globals()
    PARAMS = {list(ep.params)!r}
    CLIP_NAMES = {CLIP_FUNCTIONS!r}
    S = {{}}
    target = G[{ep.name!r}]

    def unwrapped(x):  # the module inside a DistributedDataParallel, the optimizer inside Accelerate's
        return getattr(x, "module", None) or getattr(x, "optimizer", None) or x

    @functools.wraps(target)
    def entry(*args):
        a, s = dict(zip(PARAMS, args)), {{}}
        T = a.get({mutant.target!r})
{_indent(mutant.before, 8)}
        try:
            return target(*({mutant.args or "args"}))
        finally:
{_indent(mutant.after, 12)}

    G[{ep.name!r}] = entry


_amp_dojo_mutant()
"""


@dataclass
class MutantResult:
    name: str
    description: str
    killed: bool
    status: str
    failed_checks: list[str] = field(default_factory=list)
    skipped: str | None = None  # the lesson's reason, for an equivalent mutant
    error: str | None = None
    kind: str = "generic"  # or "lesson": one of the lesson's own (grader/authoring/lesson_mutants.py)
    missed: list[str] = field(default_factory=list)  # what the lesson says must catch it and did not


def applicable(exercise: Exercise, device_kind: str | None = None) -> list[Mutant]:
    """One instance per argument a mutant works on: with two optimizers, `no_step[opt_a]` and `no_step[opt_b]`
    (a second model that never trains must fail as surely as the first). With `device_kind`, only the mutants
    whose change that device can show (a copy to the device needs one)."""
    kinds = argument_kinds(exercise)
    out = []
    for m in MUTANTS:
        if not m.applies(exercise) or (device_kind is not None and device_kind not in m.devices):
            continue
        targets = [p for p, kind in kinds.items() if kind == m.over] if m.over else [None]
        for target in targets:
            name = f"{m.name}[{target}]" if len(targets) > 1 else m.name
            out.append(replace(m, name=name, target=target))
    return out


def judge(mutant: Mutant, result: GradingResult) -> MutantResult:
    """Killed means not passed: a mutant whose step raises (as skipping scaler.update() makes the next
    unscale_ raise) is stopped by the grader as surely as one that fails a check."""
    failed = [c.id for c in result.checks if c.status == FAIL]
    error = result.error.message if result.error else None
    return MutantResult(mutant.name, mutant.description, result.status != PASS, result.status, failed, error=error)


def run_all(exercise: Exercise, *, device: str = "auto", launcher=None, progress=None) -> list[MutantResult]:
    out = []
    kind = "cuda" if runner.resolve_device(device).startswith("cuda") else "cpu"
    for mutant in applicable(exercise):
        reason = exercise.mutants.skip.get(mutant.name) or (
            None
            if kind in mutant.devices
            else f"what it changes cannot be seen on {kind} (needs {' or '.join(mutant.devices)})"
        )
        if reason:
            out.append(MutantResult(mutant.name, mutant.description, False, "skipped", skipped=reason))
            continue
        if progress:
            progress(f"{exercise.id}: mutant {mutant.name}")
        out.append(judge(mutant, runner.run(exercise, source(exercise, mutant), device=device, launcher=launcher)))
    return out


def score(results: list[MutantResult], kind: str | None = None) -> float:
    """The share of mutants killed, skipped ones left out; of one kind ("generic", "lesson") or of all."""
    counted = [r for r in results if r.skipped is None and kind in (None, r.kind)]
    return sum(r.killed for r in counted) / len(counted) if counted else 1.0

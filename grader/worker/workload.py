"""Builds the seeded training problem of an exercise. Both the baseline process
and the submission process call these with the same spec, so they start from
bit-identical weights and see bit-identical batches without sharing files.

A problem comes either from a shorthand (`model.kind`: mlp, cnn, transformer)
or from the lesson's own `workload.setup` code, trusted like its reference.
Everything is built on the CPU from the seed and then moved to the device, so
the grading process can rebuild the starting weights itself.

The problem is sized to *learn* within the few graded steps: a grader can only
tell a step that trains from one that does not when training visibly moves the
loss and every layer's weights."""

from __future__ import annotations

import fnmatch
import traceback
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
# What the grader itself passes, whatever builds the problem.
GRADER_PARAMS = ("scaler", "device_type", "amp_dtype", "device", "rank", "world_size")
SETUP_FILENAME = "<workload.setup>"


class SetupError(Exception):
    """The lesson's setup code failed: the instructor's to fix, never the learner's. `line` is inside the
    setup block."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message, self.line = message, line


# -- shorthand models ---------------------------------------------------------------------------------------


def build_mlp(spec: dict) -> nn.Module:
    """Hidden layers get He initialisation (zero biases) so a deep stack passes signal and gradient through
    from the first step; PyTorch's default init shrinks both with depth and a deep MLP barely trains in 8 steps."""
    act = {"relu": nn.ReLU, "gelu": nn.GELU}[spec["activation"]]
    sizes = [spec["in_features"], *spec["hidden"]]
    blocks = [nn.Sequential(nn.Linear(a, b), act()) for a, b in zip(sizes, sizes[1:])]
    blocks.append(nn.Linear(sizes[-1], spec["out_features"]))
    for block in blocks[:-1]:
        nn.init.kaiming_normal_(block[0].weight, nonlinearity="relu")
        nn.init.zeros_(block[0].bias)
    if spec.get("sequential_blocks", True):
        return nn.Sequential(*blocks)
    return nn.Sequential(*[m for block in blocks for m in (block if isinstance(block, nn.Sequential) else [block])])


def build_cnn(spec: dict) -> nn.Module:
    """conv -> batch norm -> ReLU -> max-pool per block, then a linear classifier over the flattened map."""
    blocks, prev, size = [], spec["in_channels"], spec["image_size"]
    for channels in spec["channels"]:
        # no conv bias: BatchNorm subtracts the mean, so a bias before it gets no gradient (only rounding noise)
        blocks.append(
            nn.Sequential(
                nn.Conv2d(prev, channels, 3, padding=1, bias=False),
                nn.BatchNorm2d(channels),
                nn.ReLU(),
                nn.MaxPool2d(2),
            )
        )
        prev, size = channels, size // 2
    blocks.append(nn.Sequential(nn.Flatten(), nn.Linear(prev * size * size, spec["out_features"])))
    return nn.Sequential(*blocks)


class SelfAttention(nn.Module):
    """Multi-head causal self-attention through F.scaled_dot_product_attention."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)  # a key bias gets no gradient (softmax ignores it)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    """Pre-norm transformer block: x + attention(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, d_model: int, heads: int, mlp_ratio: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, heads)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    """Token and position embeddings, `layers` blocks, a final LayerNorm and a head over the vocabulary:
    logits of shape (batch, seq_len, vocab)."""

    def __init__(self, spec: dict):
        super().__init__()
        d = spec["d_model"]
        self.embed = nn.Embedding(spec["vocab"], d)
        self.pos = nn.Parameter(0.02 * torch.randn(spec["seq_len"], d))
        self.blocks = nn.Sequential(*[Block(d, spec["heads"], spec["mlp_ratio"]) for _ in range(spec["layers"])])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, spec["vocab"])

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        return self.head(self.ln_f(self.blocks(x)))


BUILDERS = {"mlp": build_mlp, "cnn": build_cnn, "transformer": TinyTransformer}


def build_model(spec: dict, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return BUILDERS[spec.get("kind", "mlp")](spec)


def build_optimizer(spec: dict, params) -> torch.optim.Optimizer:
    if spec["kind"] == "sgd":
        return torch.optim.SGD(params, lr=spec["lr"], momentum=spec["momentum"], weight_decay=spec["weight_decay"])
    return torch.optim.AdamW(params, lr=spec["lr"], weight_decay=spec["weight_decay"])


# -- shorthand data -----------------------------------------------------------------------------------------


class Batches:
    """Deterministic synthetic data for the shorthand models. Classification (mlp, cnn): a Gaussian mixture
    with one centre (for a CNN, one image) per class; `separation` scales the centres against unit noise:
    large enough that the loss falls clearly within the graded steps, small enough that each sample (and
    each micro-batch) moves the gradient. Tokens (transformer): each target is a fixed permutation of its
    token, a mapping the model learns within a few steps."""

    def __init__(self, workload: dict):
        self.seed = workload["seed"]
        self.model = model = workload["model"]
        self.data = workload["data"]
        gen = torch.Generator().manual_seed(self.seed + 7919)
        kind = model.get("kind", "mlp")
        if kind == "transformer":
            self.permutation = torch.randperm(model["vocab"], generator=gen)
            return
        shape = (
            (model["in_features"],)
            if kind == "mlp"
            else (model["in_channels"], model["image_size"], model["image_size"])
        )
        self.centres = self.data.get("separation", 1.0) * torch.randn(model["out_features"], *shape, generator=gen)

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        n = self.data["batch_size"]
        if self.model.get("kind") == "transformer":
            tokens = torch.randint(0, self.model["vocab"], (n, self.model["seq_len"]), generator=gen)
            return tokens, self.permutation[tokens]
        y = torch.randint(0, self.centres.shape[0], (n,), generator=gen)
        x = self.centres[y] + torch.randn(self.centres[y].shape, generator=gen)
        return x, y

    def arguments(self, step: int) -> dict:
        x, y = self.batch(step)
        n = self.data["micro_batches"]
        return {"inputs": x, "targets": y, "micro_batches": list(zip(x.chunk(n), y.chunk(n)))}


# -- lesson setup code ----------------------------------------------------------------------------------------


def lesson_code_error(exc: BaseException, filename: str) -> tuple[int | None, str]:
    """The line (in the lesson's own code compiled as `filename`) where `exc` arose, and what it says: shared by
    setup code and lesson checks, whose errors are reported at their line in the YAML file."""
    if isinstance(exc, SyntaxError):
        return (exc.lineno if exc.filename == filename else None), exc.msg
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return (frames[-1].lineno if frames else None), f"{type(exc).__name__}: {exc}"


def _setup_failure(exc: BaseException, what: str) -> SetupError:
    line, detail = lesson_code_error(exc, SETUP_FILENAME)
    where = f" (line {line} of workload.setup)" if line else ""
    return SetupError(f"the lesson's workload.setup failed {what}{where}: {detail}", line)


def load_setup(source: str) -> dict:
    """Runs the setup code and returns its namespace, which must define build(seed) and batch(step, seed)."""
    from grader.worker.evidence import record

    namespace: dict = {"__name__": "amp_dojo_setup", "record": record}
    try:
        exec(compile(source, SETUP_FILENAME, "exec"), namespace)
    except BaseException as exc:  # noqa: BLE001
        raise _setup_failure(exc, "while it was loaded") from None
    for name, signature in (("build", "build(seed)"), ("batch", "batch(step, seed)")):
        if not callable(namespace.get(name)):
            raise SetupError(f"workload.setup must define `def {signature}:` (see docs/authoring.md)")
    return namespace


def _call_setup(fn, what: str, *args):
    try:
        return fn(*args)
    except BaseException as exc:  # noqa: BLE001
        raise _setup_failure(exc, what) from None


def _to_device(value, device: torch.device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def shard(value, name: str, rank: int, world_size: int):
    """Rank `rank`'s share of one per-step data argument, as DistributedSampler would deal it: a tensor's rows
    split into `world_size` equal parts; a list or tuple (the micro-batches, an (inputs, targets) pair) shared
    element by element, so every micro-batch is split across the ranks. The ranks together see the whole batch,
    which is what the single-process FP32 baseline trains on."""
    if world_size == 1:
        return value
    if isinstance(value, torch.Tensor):
        if value.dim() == 0 or value.shape[0] % world_size:
            raise SetupError(
                f"batch(step, seed) returned {name!r} with {value.shape[0] if value.dim() else 0} rows, "
                f"which {world_size} ranks cannot share equally: with workload.ranks {world_size}, "
                f"every per-step tensor's first dimension must be a multiple of {world_size}"
            )
        return value.chunk(world_size)[rank]
    if isinstance(value, (list, tuple)):
        return type(value)(shard(v, name, rank, world_size) for v in value)
    if isinstance(value, dict):
        return {k: shard(v, name, rank, world_size) for k, v in value.items()}
    return value


@dataclass
class Problem:
    """The objects of one training problem on one device: named models, optimizers and constant arguments,
    and the per-step data. The learner's entrypoint receives any of them by name."""

    models: dict[str, nn.Module]
    optimizers: dict[str, torch.optim.Optimizer]
    constants: dict
    data: object  # step -> dict of per-step arguments
    device: torch.device

    def __post_init__(self):
        # One module holding every model: a lone model called `model` is itself (its parameter names stay
        # `0.weight`, ...); several are a ModuleDict, so names say which model (`generator.0.weight`).
        self.root = self.models["model"] if list(self.models) == ["model"] else nn.ModuleDict(self.models)

    def parameters(self) -> list[nn.Parameter]:
        return list(self.root.parameters())

    def optimized(self) -> set[int] | None:
        """The ids of the parameters the optimizers hold; None where they are not built here (the learner's
        prepare builds them, or a shorthand workload looked at without its optimizer)."""
        optimizers = list(self.optimizers.values())
        if not optimizers or any(o is None for o in optimizers):
            return None
        return {id(p) for o in optimizers for g in o.param_groups for p in g["params"]}

    def names(self) -> set[str]:
        return {*self.models, *self.optimizers, *self.constants, *self.data_names, *GRADER_PARAMS}

    def unprovided(self, params: list[str]) -> str | None:
        """What is wrong when the entrypoint takes a name this problem does not provide, else None."""
        missing = [p for p in params if p not in self.names()]
        if not missing:
            return None
        return (
            f"entrypoint.params: {', '.join(missing)} is not provided by workload.setup (it provides "
            f"{', '.join(sorted(self.names()))})"
        )

    def unprovided_by(self, entrypoint: dict) -> str | None:
        """Like `unprovided`, for a whole entrypoint: the step may also take what `prepare` returns, and prepare
        itself runs once, before any step's data exists."""
        prepare = entrypoint.get("prepare")
        returned = set(prepare["returns"]) if prepare else set()
        missing = [p for p in entrypoint["params"] if p not in self.names() and p not in returned]
        if missing:
            return self.unprovided(missing)
        once = {*self.models, *self.optimizers, *self.constants, *GRADER_PARAMS}
        missing = [p for p in (prepare["params"] if prepare else []) if p not in once]
        if missing:
            return (
                f"entrypoint.prepare.params: {', '.join(missing)} is not something prepare can take (it runs "
                f"once, before any step's data; it can take {', '.join(sorted(once))})"
            )
        return None

    @property
    def data_names(self) -> list[str]:
        return list(self.step_data(0))

    def step_data(self, step: int) -> dict:
        return self.data(step)

    def state(self) -> dict[str, torch.Tensor]:
        return self.saved()[0]

    def saved(self) -> tuple[dict[str, torch.Tensor], dict]:
        """The weights as float32 CPU tensors, and the layout of those that are one rank's piece of a sharded
        parameter (FSDP2; grader/worker/sharded.py)."""
        from grader.worker.sharded import local_pieces

        pieces, layouts = local_pieces(self.root.state_dict())
        return {k: plain_float32(v) for k, v in pieces.items()}, layouts

    def arguments(self, params: list[str], step: int | None, **grader_args) -> list:
        """The positional arguments of the learner's entrypoint, by name. With `rank` and `world_size` among the
        grader's arguments, the step's data are this rank's share (see `shard`)."""
        available = {**self.models, **self.optimizers, **self.constants, **grader_args}
        data = self.step_data(step) if any(p not in available for p in params) else {}
        data = {k: shard(v, k, grader_args.get("rank", 0), grader_args.get("world_size", 1)) for k, v in data.items()}
        available.update(_to_device(data, self.device))
        return [available[name] for name in params]


def plain_float32(tensor: torch.Tensor) -> torch.Tensor:
    """A weight's values as a plain float32 CPU tensor. A tensor subclass stays one through .to() and .clone()
    (torchao's enable_fsdp_float8_all_gather wraps each Float8Linear weight in WeightWithDynamicFloat8CastTensor),
    and the grading process, which never imports the learner's libraries, loads the weights with
    weights_only=True: it would refuse the subclass, and the whole grading would end in a protocol error with no
    line. Copied into a plain tensor, the subclass gives its high-precision values, which is what it trains."""
    out = tensor.detach().to("cpu", torch.float32).clone()
    if type(out) is not torch.Tensor:
        plain = torch.empty(out.shape, dtype=torch.float32)
        plain.copy_(out)
        out = plain
    return out


def _placed(workload: dict, device: torch.device) -> torch.device:
    """Where the models start: the grading device, or the CPU where the learner's prepare moves them."""
    return device if workload.get("move_models", True) else torch.device("cpu")


def _shorthand(workload: dict, device: torch.device, optimizers: bool = True) -> Problem:
    model = build_model(workload["model"], workload["seed"]).to(_placed(workload, device))
    optimizer = build_optimizer(workload["optimizer"], model.parameters()) if optimizers else None
    return Problem({"model": model}, {"optimizer": optimizer}, {}, Batches(workload).arguments, device)


def _from_setup(workload: dict, device: torch.device) -> Problem:
    namespace = load_setup(workload["setup"])
    seed = workload["seed"]
    torch.manual_seed(seed)
    built = _call_setup(namespace["build"], "in build(seed)", seed)
    if not isinstance(built, dict) or not all(isinstance(k, str) and k.isidentifier() for k in built):
        raise SetupError(
            "build(seed) in workload.setup must return a dict of argument name -> object, e.g. "
            "{'model': model, 'optimizer': optimizer}"
        )
    models = {k: v.to(_placed(workload, device)) for k, v in built.items() if isinstance(v, nn.Module)}
    optimizers = {k: v for k, v in built.items() if isinstance(v, torch.optim.Optimizer)}
    constants = {k: v for k, v in built.items() if k not in models and k not in optimizers}
    if not models:
        raise SetupError(
            "build(seed) in workload.setup returned no nn.Module: the grader compares the models' "
            "parameters with the FP32 run, so at least one model is needed"
        )
    owned = {id(p) for m in models.values() for p in m.parameters()}
    for name, opt in optimizers.items():
        if any(id(p) not in owned for g in opt.param_groups for p in g["params"]):
            raise SetupError(
                f"the optimizer {name!r} from build(seed) holds tensors that are not parameters of "
                "the returned models; build it from model.parameters()"
            )

    def data(step: int) -> dict:
        torch.manual_seed(seed * 1_000_003 + step)
        batch = _call_setup(namespace["batch"], f"in batch(step={step}, seed)", step, seed)
        if not isinstance(batch, dict) or not all(isinstance(k, str) for k in batch):
            raise SetupError("batch(step, seed) in workload.setup must return a dict of argument name -> value")
        return batch

    return Problem(models, optimizers, constants, data, device)


def build_problem(workload: dict, device: torch.device | str = "cpu", optimizers: bool = True) -> Problem:
    """`optimizers=False` is for looking at the problem only (its starting weights, its names): a shorthand
    workload then leaves its optimizer out, whose first construction in a process imports torch._dynamo
    (seconds). Setup code builds what it builds."""
    device = torch.device(device)
    with torch.random.fork_rng(devices=[]):
        problem = _from_setup(workload, device) if workload.get("setup") else _shorthand(workload, device, optimizers)
    return _check_bookkeeping(problem, workload.get("bookkeeping") or [])


def _check_bookkeeping(problem: Problem, patterns: list[str]) -> Problem:
    """workload.bookkeeping names tensors the built-in checks leave out: each must name one, and none may name a
    parameter an optimizer trains (or a shorthand model's, which its optimizer trains): that would let a lesson
    hide training from parity."""
    names = list(problem.root.state_dict())
    held = problem.optimized()
    trained = {n for n, p in problem.root.named_parameters() if (p.requires_grad if held is None else id(p) in held)}
    for i, pattern in enumerate(patterns):
        matched = fnmatch.filter(names, pattern)
        if not matched:
            raise SetupError(
                f"workload.bookkeeping[{i}]: {pattern!r} matches no tensor of the models (they hold "
                f"{', '.join(names[:8])}{', ...' if len(names) > 8 else ''})"
            )
        if hidden := [n for n in matched if n in trained]:
            raise SetupError(
                f"workload.bookkeeping[{i}]: {pattern!r} matches {hidden[0]!r}, a parameter an optimizer "
                "trains: bookkeeping tensors are left out of parity, so only buffers and untrained tensors may be"
            )
    return problem


def initial_state(workload: dict) -> dict[str, torch.Tensor]:
    """The weights every run starts from, rebuilt in the grading process: the reference point of 'what
    training changed'. It never comes from a worker, so a submission cannot move it."""
    return build_problem(workload, optimizers=False).state()


def describe_setup(workload: dict) -> dict[str, str]:
    """name -> what the argument is (model, optimizer, constant or per-step data), for the lesson's docs,
    `grader validate` and the mutants."""
    problem = build_problem(workload)
    kinds = {
        **{k: "model" for k in problem.models},
        **{k: "optimizer" for k in problem.optimizers},
        **{k: "constant" for k in problem.constants},
        **{k: "data" for k in problem.data_names},
    }
    return {**kinds, **{k: "grader" for k in GRADER_PARAMS}}

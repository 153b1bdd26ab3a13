"""The workload a lesson trains: the built-in models and their synthetic data, the optimizer, the AMP
settings the grader hands over, and what changes per device kind. Kept apart from the rest of the lesson
schema because it describes what runs in the sandbox, not what the learner reads."""

from __future__ import annotations

import fnmatch
from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from grader.lesson.base import Strict
from grader.lesson.phase_spec import Phase, phases_problem


class MlpSpec(Strict):
    kind: Literal["mlp"] = "mlp"
    in_features: int = Field(gt=0)
    hidden: list[int] = Field(min_length=1)
    out_features: int = Field(gt=0)
    activation: Literal["relu", "gelu"] = "gelu"
    sequential_blocks: bool = Field(
        True, description="build the model as nn.Sequential of blocks (needed for checkpoint_sequential)"
    )


class CnnSpec(Strict):
    """A small CNN: per entry of `channels` a block conv3x3 -> BatchNorm2d -> ReLU -> MaxPool2d(2), then
    Flatten -> Linear to the classes. Data: class-template images plus unit noise."""

    kind: Literal["cnn"]
    in_channels: int = Field(3, gt=0)
    image_size: int = Field(16, gt=1, description="height and width of the synthetic images")
    channels: list[int] = Field(min_length=1, description="output channels of each conv block")
    out_features: int = Field(gt=1, description="number of classes")

    @model_validator(mode="after")
    def _fits(self):
        if self.image_size >> len(self.channels) < 1:
            raise ValueError(f"{len(self.channels)} pooling blocks halve image_size {self.image_size} to nothing")
        return self


class TransformerSpec(Strict):
    """A small decoder: token + position embeddings, `layers` pre-norm blocks (LayerNorm, causal multi-head
    attention through F.scaled_dot_product_attention, LayerNorm, MLP), LayerNorm and a linear head. Data: random
    tokens; each target is a fixed permutation of its token. The model returns (batch, seq_len, vocab)."""

    kind: Literal["transformer"]
    vocab: int = Field(gt=1)
    seq_len: int = Field(gt=1)
    d_model: int = Field(gt=0)
    heads: int = Field(gt=0)
    layers: int = Field(1, ge=1)
    mlp_ratio: int = Field(4, ge=1)

    @model_validator(mode="after")
    def _heads_divide(self):
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} must be a multiple of heads {self.heads}")
        return self


def _model_kind(value) -> str:
    return value.get("kind", "mlp") if isinstance(value, dict) else getattr(value, "kind", "mlp")


ModelSpec = Annotated[
    Annotated[MlpSpec, Tag("mlp")] | Annotated[CnnSpec, Tag("cnn")] | Annotated[TransformerSpec, Tag("transformer")],
    Discriminator(_model_kind),
]
MODEL_KINDS = ("mlp", "cnn", "transformer")


class OptimizerSpec(Strict):
    kind: Literal["sgd", "adamw"] = "sgd"
    lr: float = Field(gt=0)
    momentum: float = Field(0.0, ge=0)
    weight_decay: float = Field(0.0, ge=0)


class DataSpec(Strict):
    batch_size: int = Field(gt=0)
    micro_batches: int = Field(1, ge=1, description="micro-batches per step (gradient accumulation)")
    separation: float = Field(
        1.0,
        gt=0,
        description="distance of the class centres against unit noise: "
        "larger learns faster, smaller makes each sample matter more",
    )

    @model_validator(mode="after")
    def _divisible(self):
        if self.batch_size % self.micro_batches:
            raise ValueError("batch_size must be a multiple of micro_batches")
        return self


class AmpSpec(Strict):
    cuda_dtype: Literal["float16", "bfloat16"] = "float16"
    cpu_dtype: Literal["bfloat16", "float16"] = "bfloat16"
    scaler: bool = Field(False, description="the grader passes a torch.amp.GradScaler to the entrypoint")
    init_scale: float = Field(
        65536.0, gt=0, le=2.0**24, description="the grader's GradScaler starts at this scale (PyTorch's default 2**16)"
    )
    growth_interval: int = Field(
        2000,
        ge=1,
        description="good steps after which the grader's GradScaler doubles "
        "its scale (PyTorch's default 2000; a few steps make growth happen inside the "
        "graded window)",
    )
    growth_factor: float = Field(
        2.0,
        gt=1,
        le=16,
        description="what the grader's GradScaler multiplies its scale by after growth_interval good "
        "steps (PyTorch's default 2.0)",
    )
    backoff_factor: float = Field(
        0.5,
        gt=0,
        lt=1,
        description="what the grader's GradScaler multiplies its scale by after a step with inf/NaN "
        "gradients (PyTorch's default 0.5)",
    )


class WorkloadOverride(Strict):
    """Parts of the workload that differ on one device kind, e.g. a larger model on CUDA, where a small
    one cannot show a speedup, and a small one on CPU, where 16-bit matmuls may be emulated."""

    steps: int | None = Field(None, ge=2, le=200)
    model: ModelSpec | None = None
    optimizer: OptimizerSpec | None = None
    data: DataSpec | None = None
    setup: str | None = None


class Workload(Strict):
    seed: int = 0
    steps: int = Field(8, ge=2, le=200, description="training steps compared with the FP32 baseline")
    model: ModelSpec | None = Field(
        None,
        description="a built-in model (kind: mlp, cnn or transformer) with its "
        "synthetic data; or leave it out and write `setup`",
    )
    optimizer: OptimizerSpec | None = None
    data: DataSpec | None = None
    setup: str | None = Field(
        None,
        description="Python code, trusted like the reference, defining build(seed) -> "
        "dict of models, optimizers and constant arguments, and batch(step, seed) -> dict of "
        "this step's data arguments; everything on the CPU (the grader moves it)",
    )
    amp: AmpSpec = AmpSpec()
    ranks: int = Field(
        1,
        ge=1,
        le=8,
        description="processes the learner's code runs as (distributed data parallel "
        "ranks), all in one sandbox, with a process group the grader has initialised (gloo on CPU, "
        "nccl on CUDA where there is a GPU per rank); each rank gets 1/ranks of every per-step data "
        "argument, and the FP32 baseline runs once on the whole batch",
    )
    move_models: bool = Field(
        True,
        description="the grader moves the models to the grading device before the "
        "first step; false leaves them on the CPU for the learner's entrypoint.prepare to "
        "move (e.g. to `device`, then wrap)",
    )
    libraries: list[Literal["accelerate", "torchao", "fsdp"]] = Field(
        default_factory=list,
        description="libraries the learner's code uses that the grader imports first and "
        "traces (accelerate: Accelerator, prepare, accumulate, backward, clip_grad_norm_; "
        "torchao: convert_to_float8_training and each Float8Linear forward; fsdp: fully_shard and "
        "its MixedPrecisionPolicy, optimizers built, .to_local() of gradients)",
    )
    step_timeout_s: float | None = Field(
        None,
        gt=0,
        description="the longest one training step of this lesson may take, where that is more than the "
        "grader's default (a first step that torch.compile compiles takes seconds of C++ compilation); "
        "never more than the admin's lesson_step_timeout_max_s, never less than the grader's step_timeout_s",
    )
    grading_budget_s: float | None = Field(
        None,
        gt=0,
        description="the longest a whole grading of a submission may take, in seconds, from loading "
        "its code to its last reply: a cap on the budget the grader derives from the trusted runs' own time "
        "(docs/security.md); only ever tightens it",
    )
    bookkeeping: list[str] = Field(
        default_factory=list,
        description="names (or fnmatch globs such as 'model.*.seen') of tensors in the models' state that the "
        "lesson keeps for its own checks, not weights: parity, overflow, coverage and ranks leave them out; lesson "
        "checks still see them. Each must match a tensor, and none a parameter an optimizer trains",
    )
    phases: list[Phase] = Field(
        default_factory=list,
        description="the steps split into runs of separate processes: the learner's save function writes a "
        "checkpoint after each phase but the last, and their resume function reads it in the next phase's fresh "
        "process; compared with an uninterrupted FP32 run",
    )
    cuda: WorkloadOverride | None = Field(None, description="what changes when grading on CUDA")
    cpu_amx: WorkloadOverride | None = Field(
        None,
        description="what changes when grading on a CPU whose 16-bit matmuls run on AMX "
        "(faster than float32 there, so a larger model can show a speedup); elsewhere the CPU workload is graded",
    )

    @model_validator(mode="after")
    def _one_source(self):
        shorthand = [k for k in ("model", "optimizer", "data") if getattr(self, k) is not None]
        if self.setup is not None and shorthand:
            raise ValueError(
                f"a workload with setup code builds its own model, optimizer and data: remove "
                f"{', '.join(shorthand)} or the setup"
            )
        if self.setup is None and len(shorthand) < 3:
            missing = [k for k in ("model", "optimizer", "data") if getattr(self, k) is None]
            raise ValueError(f"the workload needs {', '.join(missing)} (or setup code that builds them)")
        return self

    @model_validator(mode="after")
    def _phases_fit(self):
        steps = {kind: self.for_device(kind).steps for kind in ("cpu", "cpu_amx", "cuda")}
        if (problem := phases_problem(self.phases, steps, self.ranks)) is not None:
            raise ValueError(problem)
        return self

    def is_bookkeeping(self, name: str) -> bool:
        """Whether the tensor `name` (as parity names it) is one of the lesson's bookkeeping tensors."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.bookkeeping)

    def for_device(self, kind: str) -> Workload:
        """The workload as graded on `kind` ("cpu", "cpu_amx" or "cuda"), its override applied."""
        override = {"cuda": self.cuda, "cpu_amx": self.cpu_amx}.get(kind)
        changes = {k: v for k, v in override if v is not None} if override is not None else {}
        return self.model_copy(update={**changes, "cuda": None, "cpu_amx": None})

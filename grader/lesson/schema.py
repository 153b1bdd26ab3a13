"""The lesson format, as code. Every YAML file under exercises/ must validate
against `Exercise`; `extra="forbid"` everywhere so a typo in a field name is an
error with its line, not a silently ignored key."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from grader.lesson.base import IDENTIFIER, Strict, Text, require_english
from grader.lesson.check_specs import PROFILE_CHECKS, CheckSpec
from grader.lesson.code_tokens import first_code_difference


class QuizQuestion(Strict):
    question: Text
    choices: list[Text] = Field(min_length=2)
    answer: int = Field(ge=0, description="index of the right choice")
    explanation: Text

    _en_q = field_validator("question", "explanation")(require_english)

    @model_validator(mode="after")
    def _answer_in_range(self):
        if self.answer >= len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index of choices (0..{len(self.choices) - 1})")
        return self


# The arguments a shorthand workload (model.kind) provides; a workload.setup provides the names it returns.
ENTRYPOINT_PARAMS = (
    "model",
    "optimizer",
    "scaler",
    "inputs",
    "targets",
    "micro_batches",
    "device_type",
    "amp_dtype",
    "device",
    "rank",
    "world_size",
)


class Prepare(Strict):
    """A function the learner writes that runs once, before the first step, in every process that runs their code
    (each rank): it wraps or builds what the steps use (a DistributedDataParallel model, an Accelerator) and
    returns it by name. See docs/authoring.md, "Preparing once before the steps"."""

    name: str = Field(pattern=IDENTIFIER)
    params: list[Annotated[str, Field(pattern=IDENTIFIER)]] = Field(
        default_factory=list,
        description="positional parameters, in order: models, optimizers and constants the "
        "workload provides, and the grader's scaler, device_type, amp_dtype, device, rank and world_size (no "
        "per-step data)",
    )
    returns: list[Annotated[str, Field(pattern=IDENTIFIER)]] = Field(
        min_length=1,
        description="the names of what it returns, in order (a tuple, or one object for one name); "
        "each step's entrypoint may take them, and a name the workload also provides (model) is replaced by what "
        "prepare returned",
    )

    @model_validator(mode="after")
    def _distinct(self):
        if len(set(self.returns)) != len(self.returns):
            raise ValueError("prepare.returns: each name may appear once")
        return self


class Entrypoint(Strict):
    name: str = Field(pattern=IDENTIFIER)
    params: list[Annotated[str, Field(pattern=IDENTIFIER)]] = Field(
        min_length=1,
        description="positional parameters, in order: names the workload provides (for a shorthand "
        "model: " + ", ".join(ENTRYPOINT_PARAMS) + "; for a workload.setup: the names build() and batch() return, "
        "plus scaler, device_type and amp_dtype)",
    )
    returns: str = "the loss of the step (a tensor or float)"
    prepare: Prepare | None = Field(
        None,
        description="a function of the learner's that runs once before the "
        "first step; what it returns is passed to every step by name",
    )

    def provided_by_prepare(self) -> tuple[str, ...]:
        return tuple(self.prepare.returns) if self.prepare else ()


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
    libraries: list[Literal["accelerate"]] = Field(
        default_factory=list,
        description="libraries the learner's code uses that the grader imports first and "
        "traces (accelerate: Accelerator, prepare, accumulate, backward, clip_grad_norm_)",
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

    def for_device(self, kind: str) -> Workload:
        """The workload as graded on `kind` ("cpu", "cpu_amx" or "cuda"), its override applied."""
        override = {"cuda": self.cuda, "cpu_amx": self.cpu_amx}.get(kind)
        changes = {k: v for k, v in override if v is not None} if override is not None else {}
        return self.model_copy(update={**changes, "cuda": None, "cpu_amx": None})


class ExampleExpectation(Strict):
    status: Literal["pass", "fail", "error"]
    findings: list[str] = Field(default_factory=list, description="finding ids the verdict must include")
    checks: dict[str, Literal["pass", "fail", "error", "not_applicable"]] = Field(
        default_factory=dict, description="check id -> the status that check must get"
    )
    error: str | None = Field(None, description="the error kind (e.g. exception, timeout), when status is error")


class Example(Strict):
    """A known-wrong (or alternative right) solution and the verdict it must get: `grader validate` grades it
    and fails the lesson when it is judged otherwise, so an instructor learns that a tolerance is too loose."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    why: Text | None = Field(None, description="the mistake it shows, or why this variant is right")
    code: str
    expect: ExampleExpectation


class MutantSettings(Strict):
    skip: dict[str, str] = Field(
        default_factory=dict,
        description="mutant name -> why it cannot be caught on "
        "this lesson (an equivalent mutant); `grader validate` prints the reason",
    )


class Exercise(Strict):
    id: str = Field(pattern=r"^[a-z][a-z0-9_-]*$")
    order: int = 0
    title: Text
    summary: Text
    lesson: Text
    task: Text
    entrypoint: Entrypoint
    starter: str
    starter_translations: dict[Literal["it", "id"], str] = Field(
        default_factory=dict,
        description="the starter with its comments in another language: the same code token for token, other "
        "comments; learners of that language get it (web page, `grader start`, notebook)",
    )
    reference: str
    baseline: str
    hints: list[Text] = Field(min_length=1)
    quiz: list[QuizQuestion] = Field(min_length=1)
    workload: Workload
    checks: list[CheckSpec] = Field(min_length=1)
    mutants: MutantSettings = MutantSettings()
    examples: list[Example] = Field(default_factory=list, description="solutions with the verdict each must get")

    _en = field_validator("title", "summary", "lesson", "task")(require_english)

    @model_validator(mode="after")
    def _params_exist(self):
        if self.workload.setup is None:
            provided = (*ENTRYPOINT_PARAMS, *self.entrypoint.provided_by_prepare())
            unknown = [(i, p) for i, p in enumerate(self.entrypoint.params) if p not in provided]
            if unknown:
                i, name = unknown[0]
                raise ValueError(
                    f"entrypoint.params[{i}]: {name!r} is not an argument the "
                    f"{self.workload.model.kind} workload provides; it provides "
                    f"{', '.join(ENTRYPOINT_PARAMS)} (a workload.setup can provide any name)"
                )
            prepare = self.entrypoint.prepare
            once = [n for n in ENTRYPOINT_PARAMS if n not in ("inputs", "targets", "micro_batches")]
            unknown = [(i, p) for i, p in enumerate(prepare.params if prepare else []) if p not in once]
            if unknown:
                i, name = unknown[0]
                raise ValueError(
                    f"entrypoint.prepare.params[{i}]: {name!r} is not something prepare can take: it "
                    f"runs once, before any step's data exists; it can take {', '.join(once)}"
                )
        return self

    @model_validator(mode="after")
    def _translations_are_the_starter(self):
        for lang, code in self.starter_translations.items():
            if (difference := first_code_difference(self.starter, code)) is not None:
                raise ValueError(f"starter_translations.{lang}: {difference}")
        return self

    def starter_in(self, lang: str) -> str:
        """The starter a learner of `lang` gets: its translation, else the English one."""
        return self.starter_translations.get(lang, self.starter)

    @model_validator(mode="after")
    def _consistent(self):
        if self.check("memory") and self.workload.steps < 4:
            raise ValueError("the memory check measures steps 2 and 3: set workload.steps to 4 or more")
        if "scaler" in self.entrypoint.params and not self.workload.amp.scaler:
            raise ValueError("the entrypoint takes a scaler: set workload.amp.scaler to true")
        if self.check("overflow") and "scaler" not in self.entrypoint.params:
            raise ValueError("the overflow check needs a GradScaler: add scaler to entrypoint.params")
        if (over := self.check("overflow")) is not None and over.at_step is not None:
            steps = min(self.workload.for_device(kind).steps for kind in ("cpu", "cpu_amx", "cuda"))
            if over.at_step >= steps - 1:
                raise ValueError(
                    f"checks: overflow.at_step {over.at_step} leaves no step after it to grade the "
                    f"recovery: the window has {steps} steps (0 to {steps - 1}); use at most {steps - 2}"
                )
        if self.check("speedup") and self.check("step_time"):
            raise ValueError("speedup and step_time both time the submission's steps: keep one of them")
        return self

    @model_validator(mode="after")
    def _ranks_consistent(self):
        ranks = self.workload.ranks
        if ranks > 1:
            unsupported = [c.id for c in self.checks if c.id in ("speedup", "memory", *PROFILE_CHECKS)]
            if unsupported:
                raise ValueError(
                    f"checks: {', '.join(unsupported)} cannot grade a workload with ranks > 1 yet (it "
                    "would time or measure one process against several); remove it or set ranks: 1"
                )
        elif self.check("ranks"):
            raise ValueError(
                "workload.ranks: the ranks check compares the weights of several ranks: set ranks to 2 "
                "or more, or remove the check"
            )
        if not self.workload.move_models and self.entrypoint.prepare is None:
            raise ValueError(
                "workload.move_models: false leaves the models on the CPU for the learner to move, which "
                "needs a function that runs before the steps: add entrypoint.prepare"
            )
        return self

    @model_validator(mode="after")
    def _examples_name_known_checks(self):
        names = [e.name for e in self.examples]
        if len(set(names)) != len(names):
            raise ValueError("examples: each example needs its own name")
        ids = {c.id for c in self.checks}
        for e in self.examples:
            unknown = sorted(set(e.expect.checks) - ids)
            if unknown:
                raise ValueError(f"examples: {e.name} expects checks this lesson does not have: {', '.join(unknown)}")
        return self

    @model_validator(mode="after")
    def _unique_checks(self):
        ids = [c.id for c in self.checks]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"each check may appear once; repeated: {', '.join(dupes)}")
        return self

    def check(self, check_id: str):
        return next((c for c in self.checks if c.id == check_id), None)

    def public(self, device_kind: str = "cpu") -> dict:
        """What a submission's process may see: never the reference solution."""
        return {
            "id": self.id,
            "entrypoint": self.entrypoint.model_dump(),
            "workload": self.workload.for_device(device_kind).model_dump(),
        }

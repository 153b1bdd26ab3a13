"""The lesson format, as code. Every YAML file under exercises/ must validate
against `Exercise`; `extra="forbid"` everywhere so a typo in a field name is an
error with its line, not a silently ignored key."""

from __future__ import annotations

import ast
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from grader.lesson.base import IDENTIFIER, DeviceKinds, Strict, Text, devices_field, require_english
from grader.lesson.check_specs import PROFILE_CHECKS, CheckSpec
from grader.lesson.code_tokens import first_code_difference
from grader.lesson.mutant_spec import MutantSettings, edit_problems
from grader.lesson.workload_spec import Workload


class QuizQuestion(Strict):
    question: Text
    choices: list[Text] = Field(min_length=2)
    answer: int = Field(ge=0, description="index of the right choice")
    explanation: Text

    _en_q = field_validator("question", "explanation")(require_english)

    @model_validator(mode="after")
    def _answer_in_range(self):
        if self.answer >= len(self.choices):
            raise ValueError(f"answer: {self.answer} is not an index of choices (0..{len(self.choices) - 1})")
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


class ExampleExpectation(Strict):
    status: Literal["pass", "fail", "error"]
    findings: list[str] = Field(default_factory=list, description="finding ids the verdict must include")
    checks: dict[str, Literal["pass", "fail", "error", "not_applicable"]] = Field(
        default_factory=dict, description="check id -> the status that check must get"
    )
    error: str | None = Field(None, description="the error kind (e.g. exception, timeout), when status is error")
    others: Literal["pass", "any"] | None = Field(
        None,
        description="the checks `checks` does not list: pass (each passes, or does not apply on this device) or "
        "any (not guarded); default pass for a `status: pass` example, any otherwise",
    )
    absent: list[str] = Field(default_factory=list, description="finding ids the verdict must not include")

    @property
    def others_pass(self) -> bool:
        return (self.others or ("pass" if self.status == "pass" else "any")) == "pass"

    @model_validator(mode="after")
    def _coherent(self):
        if both := sorted(set(self.findings) & set(self.absent)):
            raise ValueError(f"findings and absent both name {', '.join(both)}")
        if self.others == "pass" and self.status == "error":
            raise ValueError("others: pass cannot hold for an error example: the checks of a run that errored fail")
        failing = [c for c, s in self.checks.items() if s in ("fail", "error")]
        if self.others == "pass" and self.status == "fail" and not failing:
            raise ValueError("others: pass with status fail: list the check that fails in `checks`")
        return self


class Example(Strict):
    """A known-wrong (or alternative right) solution and the verdict it must get: `grader validate` grades it
    and fails the lesson when it is judged otherwise, so an instructor learns that a tolerance is too loose."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    why: Text | None = Field(None, description="the mistake it shows, or why this variant is right")
    code: str
    expect: ExampleExpectation
    devices: DeviceKinds = devices_field()


class CompileWarmup(Strict):
    """Code the grader compiles ahead, as it compiles the reference, into the lesson's trusted compile cache: a
    wrong step many learners take on the way (the model compiled, autocast still to add) then loads its kernels
    instead of spending a grading on compiling them (grader/judge/compile_warm.py)."""

    why: str = Field(description="the step on the way it stands for (for authors; learners never see it)")
    code: str


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
    compile_warmups: list[CompileWarmup] = Field(
        default_factory=list,
        description="a compile lesson's common wrong steps, compiled by the grader into its trusted compile cache",
    )

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

    @property
    def compiles(self) -> bool:
        """The lesson is about torch.compile: its reference compiles, and so will most of its learners' code
        (their workers start with the compiler loaded; its trusted compile cache is worth filling)."""
        return "torch.compile" in self.reference

    def starter_in(self, lang: str) -> str:
        """The starter a learner of `lang` gets: its translation, else the English one."""
        return self.starter_translations.get(lang, self.starter)

    @model_validator(mode="after")
    def _consistent(self):
        if self.check("memory") and self.workload.steps < 4:
            raise ValueError("workload.steps: the memory check measures steps 2 and 3: set it to 4 or more")
        if "scaler" in self.entrypoint.params and not self.workload.amp.scaler:
            raise ValueError("workload.amp.scaler: the entrypoint takes a scaler: set it to true")
        if self.check("overflow") and "scaler" not in self.entrypoint.params:
            raise ValueError("entrypoint.params: the overflow check needs a GradScaler: add scaler to it")
        if (over := self.check("overflow")) is not None and over.at_step is not None:
            steps = min(self.workload.for_device(kind).steps for kind in ("cpu", "cpu_amx", "cuda"))
            if (last := over.steps(steps)[-1]) >= steps - 1:
                raise ValueError(
                    f"checks[{self.checks.index(over)}].at_step: {last} leaves no step after it to grade the "
                    f"recovery: the window has {steps} steps (0 to {steps - 1}); use at most {steps - 2}"
                )
        if self.check("speedup") and (timed := self.check("step_time")):
            raise ValueError(
                f"checks[{self.checks.index(timed)}]: speedup and step_time both time the submission's steps: "
                "keep one of them"
            )
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
    def _warmups_compile(self):
        if self.compile_warmups and not self.compiles:
            raise ValueError("compile_warmups: the reference never calls torch.compile, so nothing would use them")
        for i, warmup in enumerate(self.compile_warmups):
            try:
                ast.parse(warmup.code)
            except SyntaxError as exc:
                raise ValueError(
                    f"compile_warmups[{i}].code: not valid Python (line {exc.lineno}: {exc.msg})"
                ) from None
            if "torch.compile" not in warmup.code:
                raise ValueError(f"compile_warmups[{i}].code: never calls torch.compile, so it would warm nothing")
        return self

    @model_validator(mode="after")
    def _examples_name_known_checks(self):
        names = [e.name for e in self.examples]
        if len(set(names)) != len(names):
            raise ValueError("examples: each example needs its own name")
        ids = {c.id for c in self.checks}
        for i, e in enumerate(self.examples):
            unknown = sorted(set(e.expect.checks) - ids)
            if unknown:
                raise ValueError(
                    f"examples[{i}].expect.checks: {e.name} expects checks this lesson does not have: "
                    f"{', '.join(unknown)}"
                )
        return self

    @model_validator(mode="after")
    def _lesson_mutants_apply(self):
        ids = {c.id for c in self.checks}
        for i, m in enumerate(self.mutants.lesson):
            if unknown := sorted(set(m.caught_by.checks) - ids):
                raise ValueError(
                    f"mutants.lesson[{i}].caught_by.checks: not checks of this lesson: {', '.join(unknown)}"
                )
        if problems := edit_problems(self.reference, self.mutants):
            raise ValueError(problems[0])
        return self

    @model_validator(mode="after")
    def _unique_checks(self):
        ids = [c.id for c in self.checks]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"checks: each check may appear once; repeated: {', '.join(dupes)}")
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

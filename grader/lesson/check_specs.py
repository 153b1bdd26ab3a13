"""The checks a lesson may list under `checks:`, with their thresholds: the
built-in ones by id, and a lesson's own (`python:`), told apart by their id."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from grader.lesson.base import IDENTIFIER, Strict, Text, require_english

FAST_CPU = "cpu_amx"  # a CPU whose 16-bit matmuls run on AMX, faster than float32: lessons key thresholds by it


def threshold_for(min_speedup: dict, kind: str) -> float | None:
    """A fast CPU is held to its own threshold, else to a plain `cpu` one; a plain CPU only to `cpu`."""
    if kind == FAST_CPU:
        return min_speedup.get(FAST_CPU, min_speedup.get("cpu"))
    return min_speedup.get(kind)


class Tolerance(Strict):
    loss_rtol: float = Field(gt=0, description="largest allowed |loss - loss_fp32| / |loss_fp32| at any step")
    update_rtol: float = Field(
        gt=0,
        description="largest allowed ||(p - p0) - (p_fp32 - p0)|| / ||p_fp32 - p0|| "
        "for any parameter tensor: how far the submission's training moved each tensor "
        "away from where FP32 training moved it",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data):
        if isinstance(data, dict) and "param_rtol" in data:
            raise ValueError(
                "param_rtol was replaced by update_rtol, which is measured on what training changed "
                "(p - p0) rather than on the weights themselves; see docs/results.md"
            )
        return data


class CallOrderCheck(Strict):
    id: Literal["call_order"]
    autocast: bool = True
    scaler: bool = False
    weight: float = Field(1.0, gt=0)


class ParityCheck(Strict):
    id: Literal["parity"]
    tolerances: dict[Literal["float16", "bfloat16"], Tolerance]
    advice: Text | None = Field(
        None,
        description="what a parity failure usually means in this lesson; replaces "
        "the generic advice (zero_grad, loss division, double step, 16-bit weights)",
    )
    weight: float = Field(1.0, gt=0)


class CoverageCheck(Strict):
    id: Literal["coverage"]
    min_fraction: float = Field(gt=0, le=1, description="share of matmul/conv FLOPs that must run in 16-bit")
    weight: float = Field(1.0, gt=0)


class OverflowCheck(Strict):
    id: Literal["overflow"]
    at_step: int | list[int] | None = Field(
        None,
        description="the graded step (or a list of steps) whose gradients the grader makes overflow "
        "(inf) in every run, the submission's and the trusted ones; the steps after it are "
        "graded as the recovery. Default: the middle of the window (steps // 2)",
    )
    weight: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _steps_inside(self):
        steps = self.at_step if isinstance(self.at_step, list) else [] if self.at_step is None else [self.at_step]
        if isinstance(self.at_step, list) and not steps:
            raise ValueError("at_step: give at least one step, or leave at_step out for the middle of the window")
        if any(s < 1 for s in steps):
            raise ValueError("at_step: every overflowed step must be 1 or later (step 0 has no scale to back off from)")
        if len(set(steps)) != len(steps):
            raise ValueError("at_step: each step at most once")
        return self

    def steps(self, steps: int) -> list[int]:
        """The overflowed steps, in order, in a window of `steps` steps."""
        if self.at_step is None:
            return [steps // 2]
        return sorted(self.at_step) if isinstance(self.at_step, list) else [self.at_step]

    def step(self, steps: int) -> int:
        """The first overflowed step in a window of `steps` steps."""
        return self.steps(steps)[0]


class SpeedupCheck(Strict):
    id: Literal["speedup"]
    min_speedup: dict[Literal["cpu", "cpu_amx", "cuda"], float] = Field(
        description="lower bound of baseline/submission step time that must be cleared, per device kind: cuda, "
        "cpu_amx (a CPU whose 16-bit matmuls run on AMX), cpu (any CPU; cpu_amx falls back to it)"
    )
    budget_s: float = Field(30.0, gt=0, description="time spent on timing rounds at most")
    weight: float = Field(1.0, gt=0)


class MemoryCheck(Strict):
    id: Literal["memory"]
    max_ratio: dict[Literal["cpu", "cuda"], float] = Field(
        description="submission peak / baseline peak must not exceed this, per device kind"
    )
    weight: float = Field(1.0, gt=0)


class RanksCheck(Strict):
    id: Literal["ranks"]
    update_rtol: float = Field(
        1e-5,
        gt=0,
        description="largest allowed ||p_rank - p_rank0|| / ||p_rank0 - p0|| for "
        "any parameter tensor: ranks that all-reduce their gradients end bit-identical",
    )
    weight: float = Field(1.0, gt=0)


# -- profiling a given step (grader/checks/profiling.py): the lesson's starter is the step to profile and fix --


class BottleneckCheck(Strict):
    id: Literal["bottleneck"]
    answer: str = Field(
        "BOTTLENECKS",
        pattern=IDENTIFIER,
        description="the module-level name the learner assigns "
        "the symptoms their profile showed: a set of host_sync, float32_matmul, host_device_copy",
    )
    weight: float = Field(1.0, gt=0)


class HostSyncsCheck(Strict):
    id: Literal["host_syncs"]
    max_per_step: int = Field(0, ge=0, description="host syncs allowed in one step after the first")
    weight: float = Field(1.0, gt=0)


class MatmulDtypesCheck(Strict):
    id: Literal["matmul_dtypes"]
    weight: float = Field(1.0, gt=0)


class TransfersCheck(Strict):
    id: Literal["transfers"]
    max_per_step: int = Field(0, ge=0, description="host-device copies allowed in one step after the first (CUDA)")
    weight: float = Field(1.0, gt=0)


class StepTimeCheck(Strict):
    id: Literal["step_time"]
    min_speedup: dict[Literal["cpu", "cpu_amx", "cuda"], float] = Field(
        description="lower bound of given-step time / fixed-step time that must be cleared, per device kind"
    )
    budget_s: float = Field(30.0, gt=0, description="time spent on timing rounds at most")
    weight: float = Field(1.0, gt=0)


PROFILE_CHECKS = ("bottleneck", "host_syncs", "matmul_dtypes", "transfers", "step_time")
BUILT_IN_CHECKS = ("call_order", "parity", "coverage", "overflow", "speedup", "memory", "ranks", *PROFILE_CHECKS)


class LessonCheck(Strict):
    """A check the lesson brings: trusted Python run in the grading process over the evidence the grader
    collected (the trace of AMP calls, losses, parameters). See docs/authoring.md, "Lesson checks"."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: Text = Field(description="what the check makes sure of, shown with its result")
    python: str = Field(
        description="defines check(ev): returns None when the submission is right, or "
        "finding(id, message, fix, line=...) (or a list of them) for each mistake"
    )
    weight: float = Field(1.0, gt=0)

    _en_title = field_validator("title")(require_english)

    @field_validator("id")
    @classmethod
    def _not_built_in(cls, value):
        if value in BUILT_IN_CHECKS:
            raise ValueError(f"{value!r} is a built-in check; give the lesson's own check another id")
        return value


def _check_tag(value) -> str | None:
    if isinstance(value, dict):
        return "lesson" if "python" in value else value.get("id")
    return "lesson" if isinstance(value, LessonCheck) else getattr(value, "id", None)


CheckSpec = Annotated[
    Annotated[CallOrderCheck, Tag("call_order")]
    | Annotated[ParityCheck, Tag("parity")]
    | Annotated[CoverageCheck, Tag("coverage")]
    | Annotated[OverflowCheck, Tag("overflow")]
    | Annotated[SpeedupCheck, Tag("speedup")]
    | Annotated[MemoryCheck, Tag("memory")]
    | Annotated[RanksCheck, Tag("ranks")]
    | Annotated[BottleneckCheck, Tag("bottleneck")]
    | Annotated[HostSyncsCheck, Tag("host_syncs")]
    | Annotated[MatmulDtypesCheck, Tag("matmul_dtypes")]
    | Annotated[TransfersCheck, Tag("transfers")]
    | Annotated[StepTimeCheck, Tag("step_time")]
    | Annotated[LessonCheck, Tag("lesson")],
    Discriminator(
        _check_tag,
        custom_error_type="unknown_check",
        custom_error_message="unknown check id; expected one of "
        + ", ".join(BUILT_IN_CHECKS)
        + ", or a lesson check with `python:`",
    ),
]

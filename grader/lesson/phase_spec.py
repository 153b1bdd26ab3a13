"""Phases of a workload: the graded steps split into runs of separate processes, as a training job that is
stopped and resumed from a checkpoint. After a phase the learner's save function writes into a folder of the
sandbox and the process ends; the next phase starts a fresh process, builds the workload's objects anew, and
the learner's resume function reads that folder before its steps. The trusted runs are never split, so the
resumed run is compared with an uninterrupted one (docs/authoring.md, "Phases: stop and resume")."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from grader.lesson.base import IDENTIFIER, Strict

CHECKPOINT_DIR = "checkpoint_dir"  # the name under which save and resume get the checkpoint folder


class PhaseFunction(Strict):
    """A function of the learner's that the grader calls once, between phases: `save` after a phase's last step,
    `resume` in the next phase's fresh process, before its first step."""

    name: str = Field(pattern=IDENTIFIER)
    params: list[Annotated[str, Field(pattern=IDENTIFIER)]] = Field(
        default_factory=list,
        description="positional parameters, in order: the workload's models, optimizers and constants, the "
        "grader's scaler, device_type, amp_dtype, device, and checkpoint_dir (the folder to write or read; "
        "no per-step data)",
    )
    returns: list[Annotated[str, Field(pattern=IDENTIFIER)]] = Field(
        default_factory=list,
        description="resume only: the names of what it returns, in order (a tuple, or one object for one "
        "name); each replaces the object of that name in the steps that follow, as prepare's do",
    )

    @model_validator(mode="after")
    def _distinct(self):
        if len(set(self.returns)) != len(self.returns):
            raise ValueError("returns: each name may appear once")
        return self


class Phase(Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="shown in progress and errors (train, resume)")
    steps: int | None = Field(
        None,
        ge=1,
        description="how many of the graded steps this phase runs; the last phase leaves it out and runs the rest",
    )
    save: PhaseFunction | None = Field(
        None, description="the learner's function that writes the checkpoint after this phase's steps"
    )
    resume: PhaseFunction | None = Field(
        None, description="the learner's function that reads the checkpoint in this phase's fresh process"
    )

    @model_validator(mode="after")
    def _save_returns_nothing(self):
        if self.save is not None and self.save.returns:
            raise ValueError("save.returns: a save function returns nothing the grader uses; remove returns")
        return self


def phases_problem(phases: list[Phase], steps_by_kind: dict[str, int], ranks: int) -> str | None:
    """What makes a list of phases ungradable, said as the schema's error; None where it is fine."""
    if not phases:
        return None
    if len(phases) < 2:
        return "phases: one phase is the whole run: give two or more, or leave phases out"
    if ranks > 1:
        return "phases: a workload with ranks > 1 cannot be split into phases yet"
    for i, phase in enumerate(phases):
        last = i == len(phases) - 1
        if last != (phase.steps is None):
            return f"phases[{i}].steps: " + (
                "the last phase runs the rest of workload.steps: leave its steps out"
                if last
                else "every phase but the last says how many steps it runs"
            )
        if (phase.save is None) != last:
            return f"phases[{i}].save: " + (
                "the last phase saves nothing: remove save" if last else "a phase followed by another needs save"
            )
        if (phase.resume is None) != (i == 0):
            return f"phases[{i}].resume: " + (
                "the first phase starts from the workload: remove resume"
                if i == 0
                else "a phase after another needs resume"
            )
    split = sum(p.steps for p in phases[:-1])
    for kind, steps in steps_by_kind.items():
        if split >= steps:
            return (
                f"phases: the phases before the last run {split} steps, which leaves none of the {steps} steps "
                f"graded on {kind} to the last phase"
            )
    return None


def bounds(phases: list[Phase], steps: int) -> list[tuple[int, int]]:
    """Each phase's steps as (first, end), end excluded."""
    out, first = [], 0
    for phase in phases:
        end = steps if phase.steps is None else first + phase.steps
        out.append((first, end))
        first = end
    return out

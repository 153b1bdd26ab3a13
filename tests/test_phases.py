"""Lessons in phases (workload.phases): the run stops after a phase, the learner's save function writes a checkpoint,
and a fresh worker resumes from it with new objects; the resumed run is judged against an uninterrupted one. The
gradings reuse the session's cache: resume_training's lesson mutant is graded by test_lesson_mutants too."""

import time

import pytest
from pydantic import ValidationError

from grader.judge.phases import _safe
from grader.lesson.mutant_spec import edited
from grader.lesson.workload_spec import Workload

MLP = {
    "model": {"in_features": 4, "hidden": [8], "out_features": 2},
    "optimizer": {"lr": 0.1},
    "data": {"batch_size": 4},
    "steps": 6,
}
SAVE = {"name": "save", "params": ["model", "checkpoint_dir"]}
RESUME = {"name": "resume", "params": ["model", "checkpoint_dir"], "returns": ["model"]}


def test_a_new_gradscaler_built_after_loading_is_found_at_the_line_that_builds_it(exercises, grade):
    ex = exercises["resume_training"]
    m = next(m for m in ex.mutants.lesson if m.name == "scaler_rebuilt_after_load")
    source = edited(ex.reference, m)
    result = grade("resume_training", source)
    found = [f for f in result.check("scale_restored").findings if f.id == "scaler_not_restored"]
    built = next(i for i, text in enumerate(source.splitlines(), 1) if "GradScaler(" in text)
    assert [f.line for f in found] == [built], result.to_dict()
    assert result.check("parity").status == "pass"  # the scale changes no weight in bfloat16: only the check sees it


def test_two_phases_with_save_then_resume_are_a_workload():
    wl = Workload(**MLP, phases=[{"name": "train", "steps": 2, "save": SAVE}, {"name": "resume", "resume": RESUME}])
    assert [p.name for p in wl.phases] == ["train", "resume"]


@pytest.mark.parametrize(
    "phases,said",
    [
        ([{"name": "train", "save": SAVE}], "one phase is the whole run"),
        ([{"name": "a", "steps": 2, "save": SAVE}, {"name": "b", "steps": 4, "resume": RESUME}], "leave its steps out"),
        ([{"name": "a", "steps": 2}, {"name": "b", "resume": RESUME}], "needs save"),
        ([{"name": "a", "steps": 2, "save": SAVE}, {"name": "b"}], "needs resume"),
        ([{"name": "a", "steps": 6, "save": SAVE}, {"name": "b", "resume": RESUME}], "leaves none of the 6 steps"),
    ],
)
def test_phases_the_grader_cannot_run_are_refused_with_the_reason(phases, said):
    with pytest.raises(ValidationError, match=said):
        Workload(**MLP, phases=phases)


def test_phases_are_refused_with_ranks():
    with pytest.raises(ValidationError, match="ranks > 1"):
        Workload(**MLP, ranks=2, phases=[{"name": "a", "steps": 2, "save": SAVE}, {"name": "b", "resume": RESUME}])


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../x", "", "a\x00b", "..\\x"])
def test_a_checkpoint_file_whose_path_leaves_its_folder_is_refused(path):
    assert not _safe(path)


def test_a_checkpoint_file_in_a_subfolder_is_kept():
    assert _safe("run/latest/state.pt")


RAISES_ON_RESUME = """import os

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss


def save_checkpoint(model, optimizer, scaler, checkpoint_dir):
    print("saved in the first phase")


def resume_training(model, optimizer, scaler, checkpoint_dir, device):
    state = torch.load(os.path.join(checkpoint_dir, "missing.pt"))
    return model, optimizer, scaler
"""


def test_a_resume_that_raises_is_the_learners_error_at_its_line_and_earlier_output_is_kept_once(grade):
    result = grade("resume_training", RAISES_ON_RESUME)
    assert result.status == "error" and result.error.kind == "exception", result.to_dict()
    assert (
        result.error.line
        == RAISES_ON_RESUME.splitlines().index('    state = torch.load(os.path.join(checkpoint_dir, "missing.pt"))') + 1
    )
    assert result.output.count("saved in the first phase") == 1


def test_what_the_save_function_printed_is_kept_when_the_output_reader_lags(exercises, launcher, monkeypatch):
    """The print reaches the grader through a reader thread; a reply on the other pipe can arrive first. The
    output is read once the worker is closed, so a slow reader loses nothing (it lost the line in a loaded CI)."""
    from grader import runner
    from grader.sandboxes import process

    lagging = process.OutputBuffer.run

    def run_late(self):
        time.sleep(1.0)
        lagging(self)

    monkeypatch.setattr(process.OutputBuffer, "run", run_late)
    result = runner.run(exercises["resume_training"], RAISES_ON_RESUME, device="cpu", launcher=launcher)
    assert result.status == "error", result.to_dict()
    assert result.output.count("saved in the first phase") == 1

"""Lessons that bring their own workload (setup code), checks and models: a
lesson written only in YAML is graded like a built-in one, and errors in the
instructor's Python are the lesson's, reported at their line in the file."""

import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from grader.cli import main
from grader.lesson.loader import exercise_dirs, load_all, parse_exercise
from grader.worker import workload

MULTI = (ROOT / "exercises" / "multiple_models.yaml").read_text()


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def yaml_only_lesson(folder: Path, text: str = MULTI, lesson_id: str = "two_nets") -> Path:
    """A new lesson in its own folder: a copy of a setup-code lesson under a new id, no Python anywhere."""
    path = folder / f"{lesson_id}.yaml"
    path.write_text(text.replace("id: multiple_models\n", f"id: {lesson_id}\n", 1).replace("order: 6", "order: 60"))
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_yaml_only_lesson_with_setup_code_is_listed_and_graded_by_the_cli(tmp_path, monkeypatch):
    lesson = yaml_only_lesson(tmp_path)
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path))
    assert tmp_path in exercise_dirs() and "two_nets" in invoke("list").output
    exercise = load_all()["two_nets"]
    (tmp_path / "ref.py").write_text(exercise.reference)
    (tmp_path / "start.py").write_text(exercise.starter)
    passed = invoke("check", "two_nets", tmp_path / "ref.py", "--device", "cpu", "--sandbox", "local")
    assert passed.exit_code == 0, passed.output
    failed = invoke("check", "two_nets", tmp_path / "start.py", "--device", "cpu", "--sandbox", "local")
    assert failed.exit_code == 1 and "optimizer_step_direct" in failed.output
    assert lesson.exists()


def test_setup_parameters_are_named_by_the_setup_not_a_fixed_list():
    exercise = load_all()["multiple_models"]
    kinds = workload.describe_setup(exercise.workload.model_dump())
    assert kinds["model_b"] == "model" and kinds["optimizer_b"] == "optimizer" and kinds["inputs"] == "data"
    problem = workload.build_problem(exercise.workload.model_dump())
    assert sorted(problem.state())[:2] == ["model_a.0.bias", "model_a.0.weight"]  # parameters named per model


def test_both_processes_rebuild_bit_identical_weights_and_data_from_the_seed():
    spec = load_all()["multiple_models"].workload.model_dump()
    a, b = workload.build_problem(spec), workload.build_problem(spec)
    assert all((a.state()[k] == b.state()[k]).all() for k in a.state())
    x1, y1 = a.arguments(["inputs", "targets"], 3)
    x2, y2 = b.arguments(["inputs", "targets"], 3)
    assert (x1 == x2).all() and (y1 == y2).all()


def _broken(tmp_path, old: str, new: str) -> Path:
    path = yaml_only_lesson(tmp_path, MULTI.replace(old, new, 1))
    assert parse_exercise(path)[1] == []  # a valid file: the error is in its Python
    return path


def test_an_error_in_setup_code_is_reported_at_its_line_in_the_yaml_file(tmp_path):
    path = _broken(tmp_path, "        model_a, model_b = mlp(", "        model_a, model_b = mlpp(")
    result = invoke("validate", "--schema-only", path)
    assert result.exit_code == 1
    assert f"{path}:{line_of(path, 'mlpp(')}: workload.setup:" in result.output, result.output
    assert "NameError" in result.output and "build(seed)" in result.output


def test_a_setup_error_at_grading_time_is_the_lessons_error_not_the_learners(tmp_path, monkeypatch):
    path = _broken(tmp_path, "        model_a, model_b = mlp(", "        model_a, model_b = mlpp(")
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path))
    (tmp_path / "sub.py").write_text(load_all()["multiple_models"].reference)
    result = invoke("check", "two_nets", tmp_path / "sub.py", "--device", "cpu", "--sandbox", "local")
    assert result.exit_code == 2
    assert "lesson's fault" in result.output and "line" in result.output and path.exists()


def test_an_entrypoint_parameter_the_setup_does_not_provide_is_named(tmp_path):
    path = _broken(tmp_path, "params: [model_a, model_b,", "params: [model_a, model_c,")
    result = invoke("validate", "--schema-only", path)
    assert result.exit_code == 1
    assert f"{path}:{line_of(path, 'model_c')}: entrypoint.params[1]: 'model_c' is not provided by workload.setup" in (
        result.output
    )


def test_an_error_in_a_lesson_check_is_reported_at_its_line(tmp_path):
    text = (ROOT / "exercises" / "gradient_penalty.yaml").read_text()
    path = tmp_path / "gradient_penalty.yaml"
    path.write_text(text.replace("          first, out = grads[0], []", "          first, out = grads[0], [", 1))
    result = invoke("validate", "--schema-only", path)
    assert result.exit_code == 1
    assert re.search(rf"{re.escape(str(path))}:\d+: checks\[1\]\.python: lesson check 'penalty_pass'", result.output)


def test_a_lesson_check_finds_the_mistake_it_was_written_for(grade):
    ex = load_all()["gradient_penalty"]
    wrong = ex.reference.replace("torch.autograd.grad(scaler.scale(loss), params", "torch.autograd.grad(loss, params")
    result = grade("gradient_penalty", wrong)
    check = result.check("penalty_pass")
    assert check.status == "fail" and check.findings[0].id == "penalty_grad_of_unscaled_loss"
    assert (
        check.findings[0].line
        == wrong.splitlines().index(next(line for line in wrong.splitlines() if "autograd.grad(loss" in line)) + 1
    )


CNN = re.sub(
    r"  model: \{in_features.*\n",
    "  model: {kind: cnn, in_channels: 3, image_size: 16, channels: [16, 32], out_features: 10}\n",
    (ROOT / "exercises" / "autocast.yaml").read_text(),
    count=1,
)
CNN = re.sub(r"  data: \{.*\n", "  data: {batch_size: 128, separation: 1.0}\n", CNN, count=1)
CNN = re.sub(r"  optimizer: \{.*\n", "  optimizer: {kind: sgd, lr: 0.02, momentum: 0.9}\n", CNN, count=1)
CNN = CNN.replace("id: autocast\n", "id: cnn_autocast\n", 1).replace(
    "bfloat16: {loss_rtol: 0.02, update_rtol: 0.05}", "bfloat16: {loss_rtol: 0.02, update_rtol: 0.08}", 1
)


def test_the_cnn_shorthand_grades_in_seconds_and_counts_its_convolutions(tmp_path, monkeypatch, launcher):
    from grader import runner

    (tmp_path / "cnn_autocast.yaml").write_text(CNN)
    monkeypatch.setenv("AMP_DOJO_EXERCISES", str(tmp_path))
    exercise = load_all()["cnn_autocast"]
    assert exercise.workload.model.kind == "cnn"
    started = time.perf_counter()
    result = runner.run(exercise, exercise.reference, device="cpu", launcher=launcher)
    assert result.status == "pass", result.to_dict()
    assert time.perf_counter() - started < 60  # a few seconds on 2 cores; generous for a loaded CI machine
    assert result.check("coverage").measured["fraction_16bit"] == 1.0
    convolutions = 2 * 128 * 16 * 16 * 16 * 3 * 9  # the first conv's forward alone, in FLOPs
    assert result.check("coverage").measured["total_flops"] > 8 * convolutions
    starter = runner.run(exercise, exercise.starter, device="cpu", launcher=launcher)
    assert starter.check("coverage").status == "fail" and starter.check("coverage").measured["fraction_16bit"] == 0


@pytest.mark.parametrize("kind", ["cnn", "transformer"])
def test_shorthand_models_learn_in_fp32_within_eight_steps(kind):
    spec = {
        "cnn": {"kind": "cnn", "in_channels": 3, "image_size": 16, "channels": [16, 32], "out_features": 10},
        "transformer": {
            "kind": "transformer",
            "vocab": 32,
            "seq_len": 16,
            "d_model": 64,
            "heads": 4,
            "layers": 1,
            "mlp_ratio": 4,
        },
    }[kind]
    optimizer = (
        {"kind": "sgd", "lr": 0.02, "momentum": 0.9, "weight_decay": 0.0}
        if kind == "cnn"
        else {"kind": "adamw", "lr": 0.003, "momentum": 0.0, "weight_decay": 0.0}
    )
    problem = workload.build_problem(
        {
            "seed": 1,
            "model": spec,
            "optimizer": optimizer,
            "data": {"batch_size": 128 if kind == "cnn" else 32, "micro_batches": 1, "separation": 1.0},
        }
    )
    import torch.nn.functional as F

    model, opt, losses = problem.models["model"], problem.optimizers["optimizer"], []
    for step in range(8):
        x, y = problem.arguments(["inputs", "targets"], step)
        opt.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out.flatten(0, -2) if out.dim() == 3 else out, y.flatten())
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 2 / 3 * losses[0], losses

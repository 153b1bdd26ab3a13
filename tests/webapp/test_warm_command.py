"""`amp-dojo warm`: the trusted runs computed ahead of time (an install or upgrade step) land where the workers
look for them: the store TRUSTED_RUNS names, keyed by the workers' sandbox and device."""

import pytest
from click.testing import CliRunner

from grader import runner
from grader.judge import trusted_runs
from webapp import cli


@pytest.fixture
def settings(tmp_path, monkeypatch):
    monkeypatch.delenv("AMP_DOJO_CONFIG", raising=False)
    for key, value in {
        "QUEUE_URL": f"sqlite:///{tmp_path / 'queue.sqlite3'}",
        "TRUSTED_RUNS": str(tmp_path / "trusted"),
        "SANDBOX": "local",
        "ALLOW_LOCAL_SANDBOX": "true",
        "DEVICE": "cpu",
    }.items():
        monkeypatch.setenv(f"AMP_DOJO_{key}", value)
    yield tmp_path
    runner.use_trusted_store(None)


def test_warm_computes_into_the_workers_store_with_their_sandbox(settings, monkeypatch):
    warmed = []

    def warm(exercise, device, launcher, cancel=None):
        warmed.append((exercise.id, device, launcher.name, trusted_runs._STORE.path))
        return ["baseline", "reference"] if exercise.id == "autocast" else []

    monkeypatch.setattr(runner, "warm", warm)
    result = CliRunner().invoke(cli.main, ["warm", "autocast", "grad_scaler"])
    assert result.exit_code == 0, result.output
    assert warmed == [(i, "cpu", "local", settings / "trusted") for i in ("autocast", "grad_scaler")]
    assert "computed baseline, reference" in result.output and "already stored" in result.output


def test_warm_refuses_where_nothing_would_be_kept(settings, monkeypatch):
    monkeypatch.setenv("AMP_DOJO_TRUSTED_RUNS", "")
    result = CliRunner().invoke(cli.main, ["warm"])
    assert result.exit_code == 1 and "TRUSTED_RUNS is empty" in result.output


def test_warm_names_a_lesson_it_does_not_know(settings):
    result = CliRunner().invoke(cli.main, ["warm", "no_such_lesson"])
    assert result.exit_code == 1 and "no lesson no_such_lesson" in result.output

"""scripts/gpu-check's CPU-only parts: arguments, the repeated gradings and the report it writes."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import gpu_check  # noqa: E402


def test_report_has_one_row_per_lesson_and_sandbox_and_names_what_was_skipped(tmp_path):
    out = tmp_path / "calibration.md"
    code = gpu_check.main(
        [
            "--device",
            "cpu",
            "--repeats",
            "2",
            "--sandboxes",
            "local,nosuch",
            "--lessons",
            "autocast",
            "--output",
            str(out),
        ]
    )
    text = out.read_text()
    assert code == 0, text
    row = next(line for line in text.splitlines() if line.startswith("| autocast | local"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "pass" and cells[3] == "0"  # verdict, flips
    assert cells[4] == "-"  # no speedup threshold on CPU: not measured, not faked
    assert "Not run in the nosuch sandbox" in text and "torch" in text


def test_summary_counts_verdict_flips():
    class R:
        def __init__(self, status):
            self.status, self.error, self.duration_s = status, None, 1.0

        def check(self, _):
            return None

    row = gpu_check.summarize("x", "local", [R("pass"), R("fail"), R("pass")])
    assert row["verdict"] == "pass" and row["flips"] == 1 and row["speedup_mean"] is None


def test_bad_arguments_are_refused():
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--repeats", "0"])
    assert gpu_check.main(["--device", "cpu", "--lessons", "nope", "--output", "/dev/null"]) == 2


def test_script_refuses_to_run_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    done = subprocess.run([str(ROOT / "scripts" / "gpu-check")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "sees no CUDA device" in done.stderr


def test_a_docker_sandbox_whose_containers_cannot_use_the_device_is_reported_not_graded(tmp_path, monkeypatch):
    """A current image is not enough on a GPU: CI's CPU image, or a host without the container toolkit or with an
    older driver, would fail every grading of the table; the report names why instead."""
    monkeypatch.setattr(gpu_check, "unavailable_reason", lambda sandbox: None)
    monkeypatch.setattr(gpu_check, "docker_cuda_problem", lambda device: "the image holds a CPU build of torch")
    out = tmp_path / "calibration.md"
    code = gpu_check.main(["--device", "cpu", "--sandboxes", "docker", "--lessons", "autocast", "--output", str(out)])
    text = out.read_text()
    assert code == 1 and "| autocast | docker" not in text
    assert "Not run in the docker sandbox: the image holds a CPU build of torch" in text


def test_the_device_probe_asks_nothing_of_docker_on_a_cpu():
    assert gpu_check.docker_cuda_problem("cpu") is None

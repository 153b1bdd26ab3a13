"""`scripts/run` starts quietly: the setup's notices (pip, setuptools' deprecation warnings) are shown only when the
setup fails, and then in full. Run in a copy of the script beside stand-ins for the setup and the commands."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOISE = "SetuptoolsDeprecationWarning: License classifiers are deprecated."


def tree(tmp_path: Path, setup_status: int) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run", tmp_path / "scripts" / "run")
    stubs = {
        "scripts/system-deps": "exit 0",
        "scripts/setup": f'echo "{NOISE}" >&2; echo "setup: ok (torch)"; exit {setup_status}',
        ".venv/bin/grader": 'echo "grader $*"',
        ".venv/bin/amp-dojo": 'echo "AMP Dojo is at http://$3:$5/  (Ctrl+C stops it)" >&2',
    }
    for name, body in stubs.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#!/usr/bin/env bash\n{body}\n")
        path.chmod(0o755)
    return tmp_path / "scripts" / "run"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_normal_start_prints_only_the_url(tmp_path):
    done = subprocess.run([tree(tmp_path, 0)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert done.stdout == "" and done.stderr == "AMP Dojo is at http://127.0.0.1:8000/  (Ctrl+C stops it)\n"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_failed_setup_shows_everything_it_said(tmp_path):
    done = subprocess.run([tree(tmp_path, 1), "list"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and NOISE in done.stderr and "setup: ok" in done.stderr
    assert "grader list" not in done.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_other_arguments_go_to_the_grader_after_a_quiet_setup(tmp_path):
    done = subprocess.run([tree(tmp_path, 0), "check", "autocast", "mine.py"], capture_output=True, text=True)
    assert done.stdout == "grader check autocast mine.py\n" and done.stderr == ""

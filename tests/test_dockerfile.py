"""The grading image's default build against the versions CI runs. A GPU server builds the Dockerfile with its
defaults (`docker build .`), CI builds it offline with scripts/build-image's arguments: the defaults once took a
PyTorch 2.7 image that the pinned torchao refused, so the CUDA image, the product's real target, could not be made
from the README. These tests read the files alone (no Docker): the real offline build is scripts/build-image."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()
BUILD_IMAGE = (ROOT / "scripts" / "build-image").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def default_args() -> dict[str, str]:
    """The Dockerfile's `ARG NAME=default` lines."""
    return dict(re.findall(r"^ARG (\w+)=(\S*)$", DOCKERFILE, re.M))


def pinned(name: str) -> str:
    """pyproject.toml's pin of a dependency: `name==version`, as pip takes it."""
    specs = [d.split("#")[0].strip() for d in PYPROJECT["project"]["dependencies"]]
    (spec,) = [s for s in specs if Requirement(s).name == name and "==" in s]
    return spec


def test_the_default_build_installs_the_torch_torchao_and_accelerate_ci_runs():
    args = default_args()
    assert args["TORCH_SPEC"] == PYPROJECT["tool"]["amp-dojo"]["torch"]
    assert args["TORCHAO_SPEC"] == pinned("torchao")
    assert args["ACCELERATE_SPEC"] == pinned("accelerate")


def test_ci_s_torch_satisfies_the_package_s_own_torch_requirement():
    ci_torch = Requirement(PYPROJECT["tool"]["amp-dojo"]["torch"])
    (version,) = [s.version for s in ci_torch.specifier]
    (declared,) = [Requirement(d) for d in PYPROJECT["project"]["dependencies"] if Requirement(d).name == "torch"]
    assert declared.specifier.contains(version)


@pytest.mark.parametrize("script", ["setup", "build-image"])
def test_the_scripts_install_the_torch_pyproject_names(script):
    """Their default is read from pyproject.toml: what CI's venv and its offline image get."""
    (line,) = re.findall(r"^TORCH_SPEC=.*$", (ROOT / "scripts" / script).read_text(), re.M)
    env = {k: v for k, v in os.environ.items() if k != "TORCH_SPEC"}
    done = subprocess.run(
        ["bash", "-c", f'{line}\nprintf %s "$TORCH_SPEC"'], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.stdout == PYPROJECT["tool"]["amp-dojo"]["torch"]


def test_the_default_base_is_a_plain_python_image_of_the_offline_base_s_python():
    """No PyTorch inside (a pytorch/pytorch image brings its own, which the pins must not meet), a tag that names
    its Python and Debian release (never `latest`), and the same Python and Debian release as the base and wheels
    scripts/build-image makes offline: CI and a GPU server grade on the same interpreter."""
    base = default_args()["BASE_IMAGE"]
    assert "torch" not in base and "cuda" not in base
    match = re.fullmatch(r"python:(3\.\d+)(?:\.\d+)?-slim-(\w+)", base)
    assert match, base
    python, debian = match.groups()
    assert f"--python-version {python} " in BUILD_IMAGE
    assert re.search(rf"^\s*debootstrap .* {debian} ", BUILD_IMAGE, re.M)


def test_the_offline_build_reads_its_wheels_folder_alone():
    """scripts/build-image's build has no index to reach: it passes OFFLINE=1, which the install honours."""
    assert "--build-arg OFFLINE=1" in BUILD_IMAGE
    assert default_args()["OFFLINE"] == ""
    assert re.search(r'"\$OFFLINE" = 1 \]; then \w+="--no-index --find-links /tmp/wheels"', DOCKERFILE)

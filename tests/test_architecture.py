"""The layout keeps the trust boundary where docs/architecture.md draws it: the
in-sandbox package (grader/worker/) runs with nothing else of the grader, the
grading image holds it alone, nothing imports in a circle, and no module grows
past a few screens. The import contracts themselves are pyproject.toml's, run
by `lint-imports` in .ci/run."""

import json
import os
import re
import shutil
import subprocess
import sys

import grimp
import pytest
from conftest import ROOT

from grader.sandboxes.docker_sandbox import code_hash
from grader.sandboxes.launcher import WORKER_PACKAGE, tree_hash

MAX_MODULE_LINES = 450


@pytest.mark.parametrize("package", ["grader", "webapp", "amp_dojo"])
def test_no_module_imports_itself_through_others(package):
    graph = grimp.build_graph(package, cache_dir=None)
    cycles = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycles.add(" -> ".join((importer, *back)))
    assert not cycles, "\n".join(sorted(cycles))


def test_no_grader_module_is_longer_than_a_few_screens():
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "grader").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long


WORKER_ALONE = """
import importlib.util, runpy, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]  # the copy first, then torch's site-packages (no .pth: no editable grader)
assert importlib.util.find_spec("grader.judge") is None, "the rest of the grader is within reach"
assert importlib.util.find_spec("grader.worker").origin.startswith(sys.argv[1])
runpy.run_module("grader.worker", run_name="__main__")
"""


def test_the_worker_starts_with_the_in_sandbox_package_alone(tmp_path):
    """A copy of grader/worker/ and nothing else (no grader/__init__.py: `grader` is a namespace package there,
    as in the grading image and in bwrap): the worker imports what every grading needs and says it is ready."""
    import torch

    shutil.copytree(WORKER_PACKAGE, tmp_path / "grader" / "worker", ignore=shutil.ignore_patterns("__pycache__"))
    site_packages = os.path.dirname(os.path.dirname(torch.__file__))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    worker = subprocess.run(
        [sys.executable, "-S", "-c", WORKER_ALONE, str(tmp_path), site_packages],
        input=b'{"cmd": "exit"}\n',
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert worker.returncode == 0, worker.stderr.decode()[-2000:]
    assert json.loads(worker.stdout.splitlines()[0]) == {"ok": True, "ready": True}


def test_the_grading_image_holds_the_in_sandbox_package_only():
    copies = [line.split() for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("COPY ")]
    grader_copies = [c for c in copies if any(part.startswith("grader") for part in c[1:-1])]
    assert grader_copies == [["COPY", "grader/worker/", "/opt/amp-dojo/grader/worker/"]]


def test_the_images_hash_covers_the_in_sandbox_package_only():
    """Editing a message or a check leaves every built image current; editing the worker makes it stale."""
    assert WORKER_PACKAGE == ROOT / "grader" / "worker"
    assert code_hash() == tree_hash(WORKER_PACKAGE)
    assert code_hash() != tree_hash(ROOT / "grader")


def test_the_in_sandbox_code_never_words_a_message():
    """The catalog is the judge's: the worker sends keys and parameters (grader/worker/wire.py)."""
    for path in WORKER_PACKAGE.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) grader\.(?!worker\b)", source, re.M), path

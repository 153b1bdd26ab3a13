"""The trusted compile cache (grader/sandboxes/compile_cache.py): a compiled grading loads the kernels the grader
compiled for the lesson's reference, and no submission can change what later gradings load, nor see what
another submission compiled."""

from pathlib import Path

import pytest
from conftest import FIXTURES
from test_sandbox import launchers  # noqa: F401 - the sandboxes, skipped where they cannot run

from grader import runner
from grader.judge.compile_warm import COMPLETE
from grader.judge.workers import compile_cache_of

COUNTERS = """
    from torch._dynamo.utils import counters
    import sys as _sys
    print("inductor counters:", dict(counters["inductor"]), dict(counters["aot_autograd"]), file=_sys.stderr)
    return loss"""


def assert_loaded_not_compiled(result):
    """What COUNTERS printed: every graph and its autograd entry came from the cache, none was compiled."""
    said = next(line for line in result.output.splitlines() if line.startswith("inductor counters:"))
    assert "fxgraph_cache_hit" in said and "fxgraph_cache_miss" not in said, said
    assert "autograd_cache_hit" in said and "autograd_cache_miss" not in said, said


def test_a_compiled_grading_loads_the_kernels_the_grader_compiled_for_the_reference(exercises, grade):
    """The first grading of compile_autocast fills the lesson's cache (the reference, run as a submission is);
    a right answer's graphs then hit it: no graph is compiled again."""
    lesson = exercises["compile_autocast"]
    grade("compile_autocast", lesson.reference)
    folder = compile_cache_of(lesson, "cpu", runner.LocalLauncher())
    assert (folder / COMPLETE).exists() and (folder / "fxgraph").is_dir(), sorted(p.name for p in folder.glob("*"))
    source = lesson.reference.replace("\n    return loss", COUNTERS)
    result = grade("compile_autocast", source)
    assert_loaded_not_compiled(result)


ON_THE_WAY = """import torch
from torch.nn import functional


def prepare(model):
    compiled = torch.compile(model)
    return compiled


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    logits = model(inputs)
    loss = functional.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()
    return loss
"""


def test_a_learner_on_the_way_loads_the_graphs_of_the_lessons_compile_warmup(exercises, grade):
    """compile_autocast's warm-up is its first TODO done (compiled, no autocast yet): a learner's code at that step,
    written otherwise, compiles the same graphs, and loads them from the lesson's cache instead of compiling them."""
    lesson = exercises["compile_autocast"]
    assert lesson.compile_warmups and ON_THE_WAY not in [w.code for w in lesson.compile_warmups]
    result = grade("compile_autocast", ON_THE_WAY.replace("\n    return loss", COUNTERS))
    assert result.status == "fail" and result.check("coverage").status == "fail", result.to_dict()
    assert_loaded_not_compiled(result)


def _plant(lesson, launcher) -> Path:
    folder = compile_cache_of(lesson, "cpu", launcher)
    (folder / "ab").mkdir(parents=True)
    (folder / "ab" / "trusted-entry.py").write_text("TRUSTED")
    return folder


def _probe(lesson, launcher, marker: str):
    source = (FIXTURES / "compile_cache_probe.py").read_text().replace("__MARKER__", marker)
    return runner.run(lesson, source, device="cpu", launcher=launcher).output


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_no_submission_writes_into_the_trusted_compile_cache_or_reads_anothers_artefacts(
    backend,
    launchers,  # noqa: F811 - test_sandbox's fixture
    exercises,
    tmp_path,
    monkeypatch,
):
    monkeypatch.setenv("AMP_DOJO_COMPILE_CACHE", str(tmp_path / "compile-cache"))
    launcher, lesson = launchers(backend), exercises["autocast"]
    folder = _plant(lesson, launcher)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    first = _probe(lesson, launcher, "first")
    assert "seeded: TRUSTED" in first, first  # the grader's entry reached the sandbox
    assert "WROTE" not in first and first.count("refused:") == 3, first
    assert "planted in its own folder" in first, first
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before, "a submission changed the cache"
    second = _probe(lesson, launcher, "second")
    assert "seeded: TRUSTED" in second, second  # not the first one's POISON
    assert "found before planting: []" in second, second  # nor its planted file

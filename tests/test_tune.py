"""`grader tune ID` measures what sizing a workload needs, with the grader's own trusted runs: the loss and
gradient norm per step, the step times, the peak memory, per device kind this machine has."""

import math
import re
from pathlib import Path

from click.testing import CliRunner

from grader.cli import main


def test_tune_prints_the_loss_and_gradient_norm_of_each_step_the_step_times_and_the_memory():
    # a lesson file's path, as for `grader validate` (an id works too: it is how the CLI finds every other lesson)
    path = str(Path(__file__).parent.parent / "exercises" / "autocast.yaml")
    result = CliRunner().invoke(main, ["tune", path, "--steps", "4", "--sandbox", "local"])
    assert result.exit_code == 0, result.output
    out = result.output
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s+\d+\s+\S", line)]
    assert [int(r[0]) for r in rows] == [0, 1, 2, 3]  # --steps, not the lesson's 8
    losses, grad_norms = [[float(v) for v in r[1:3]] for r in rows], [[float(v) for v in r[3:5]] for r in rows]
    assert all(math.isfinite(v) and v > 0 for row in losses + grad_norms for v in row)
    assert losses[-1][0] < losses[0][0]  # the FP32 baseline learns
    assert "grad norm fp32 model" in out and "grad norm ref model" in out
    times = re.search(r"step time: fp32 ([\d.]+) ms, reference ([\d.]+) ms; speedup ([\d.]+)", out)
    assert times and all(float(t) > 0 for t in times.groups()), out
    assert re.search(r"peak memory \(steps 2\+\): fp32 [\d.]+ MiB, reference [\d.]+ MiB", out), out
    assert "cpu_amx:" in out and ("cuda: not available here" in out or "autocast on cuda" in out)

"""Grading time of each reference solution next to the bare time of running
the same training steps without the grader, in one plain process.

    python bench/grading_overhead.py [--device cpu] [--repeat 3]

The bare run includes importing torch in a fresh interpreter, building the
model and running `workload.steps` steps: what a learner's script would cost.
The grader additionally runs the FP32 baseline (in its own process, cached
between gradings in one process, so the first grading pays for it), traces
two steps, counts FLOPs, measures memory and compares parameters."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import runner  # noqa: E402
from grader.lesson.loader import load_all  # noqa: E402

BARE = """
import importlib.util, json, sys, torch
from grader.worker import workload  # noqa: E402
spec = json.load(open(sys.argv[1]))
mod_spec = importlib.util.spec_from_file_location("ref", sys.argv[2])
mod = importlib.util.module_from_spec(mod_spec); mod_spec.loader.exec_module(mod)
w = spec["workload"]; device = torch.device(sys.argv[3])
torch.set_num_threads(1)
problem = workload.build_problem(w, device)
scaler = torch.amp.GradScaler(device.type) if w["amp"]["scaler"] else None
dtype = workload.DTYPES[w["amp"]["cuda_dtype" if device.type == "cuda" else "cpu_dtype"]]
fn = getattr(mod, spec["entrypoint"]["name"])
for step in range(w["steps"]):
    args = problem.arguments(spec["entrypoint"]["params"], step, scaler=scaler, device_type=device.type,
                             amp_dtype=dtype)
    loss = fn(*args)
    float(loss.detach() if isinstance(loss, torch.Tensor) else loss)
import os; os._exit(0)  # skip interpreter teardown, as the grader's workers do
"""


def bare_seconds(ex, device: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        spec, code, script = Path(tmp, "spec.json"), Path(tmp, "ref.py"), Path(tmp, "bare.py")
        spec.write_text(json.dumps(ex.public()))
        code.write_text(ex.reference)
        script.write_text(BARE)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, str(script), str(spec), str(code), device],
            check=True,
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        )
        return time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    device = runner.resolve_device(args.device)
    rows = []
    for ex in load_all().values():
        runner._TRUSTED_CACHE.clear()
        first = runner.run(ex, ex.reference, device=device)
        graded = [first.duration_s] + [
            runner.run(ex, ex.reference, device=device).duration_s for _ in range(args.repeat - 1)
        ]
        bare = [bare_seconds(ex, device) for _ in range(args.repeat)]
        rows.append(
            (ex.id, first.status, first.duration_s, statistics.median(graded[1:] or graded), statistics.median(bare))
        )
    print(f"device: {device}, repeats: {args.repeat}, torch {__import__('torch').__version__}")
    print("| exercise | verdict | graded, cold (s) | graded, warm baseline (s) | bare run (s) | overhead (warm) |")
    print("|---|---|---|---|---|---|")
    for ex_id, status, cold, warm, bare in rows:
        print(f"| {ex_id} | {status} | {cold:.2f} | {warm:.2f} | {bare:.2f} | {warm / bare:.1f}x |")


if __name__ == "__main__":
    main()

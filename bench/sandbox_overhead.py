"""Start-up overhead of each sandbox backend, and the end-to-end grading time
of one reference solution in each.

    python bench/sandbox_overhead.py [--repeat 7] [--exercise autocast]

Start-up is the time from `launcher.start()` to the worker's answer to `init`
(interpreter, torch import, learner module, model) for the same trivial code,
median over --repeat runs; the overhead is that median minus local's. Grading
is `runner.run()` on the reference with a warm baseline cache (the baseline is
graded once per backend first), median over --repeat runs."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import runner  # noqa: E402
from grader.lesson.loader import load_exercise  # noqa: E402
from grader.sandboxes.kinds import make_launcher, unavailable_reason  # noqa: E402
from grader.sandboxes.limits import WorkerSpec  # noqa: E402

TRIVIAL = "def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):\n    return 0.0\n"


def startup_s(launcher, exercise) -> float:
    t0 = time.perf_counter()
    worker = launcher.start(WorkerSpec(TRIVIAL, "submission.py", exercise.public(), "cpu"))
    try:
        reply = worker.request({"cmd": "init"}, timeout=120)
        assert reply.get("ok"), reply
        return time.perf_counter() - t0
    finally:
        worker.close()


def grading_s(launcher, exercise) -> float:
    t0 = time.perf_counter()
    result = runner.run(exercise, exercise.reference, device="cpu", launcher=launcher)
    assert result.status == "pass", result.to_dict()
    return time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--exercise", default="autocast")
    args = parser.parse_args()
    exercise = load_exercise(args.exercise)
    rows = []
    for name in ("local", "bwrap", "docker"):
        why = unavailable_reason(name)
        if why:
            rows.append({"backend": name, "unavailable": why})
            continue
        launcher = make_launcher(name, allow_local=True)
        grading_s(launcher, exercise)  # fills the baseline cache and warms the page cache
        starts = [startup_s(launcher, exercise) for _ in range(args.repeat)]
        grades = [grading_s(launcher, exercise) for _ in range(args.repeat)]
        rows.append(
            {
                "backend": name,
                "startup_median_s": round(statistics.median(starts), 3),
                "startup_min_s": round(min(starts), 3),
                "startup_max_s": round(max(starts), 3),
                "grading_median_s": round(statistics.median(grades), 3),
            }
        )
    local = next(r["startup_median_s"] for r in rows if r["backend"] == "local")
    print("| backend | start-up median (s) | min–max (s) | overhead vs local (s) | grading, median (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "unavailable" in r:
            print(f"| {r['backend']} | unavailable: {r['unavailable']} | | | |")
        else:
            print(
                f"| {r['backend']} | {r['startup_median_s']} | {r['startup_min_s']}–{r['startup_max_s']} | "
                f"{r['startup_median_s'] - local:+.3f} | {r['grading_median_s']} |"
            )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()

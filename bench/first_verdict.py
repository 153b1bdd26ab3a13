"""Time from the start of a fresh instance to a first learner's verdict, while
the starting worker computes every lesson's trusted runs (WARM_AT_START) into an
empty store: does the class's first submission wait for lessons nobody asked for?

    python bench/first_verdict.py [--lessons autocast,lr_scheduler_skips] [--sandbox bwrap] [--no-warm]

For each lesson, a fresh instance (the real `amp-dojo serve` + `amp-dojo worker`,
as tests/e2e starts them: temporary database, SQLite queue whose storage holds
the trusted runs and is empty, device cpu, sandbox bwrap else local), and the
lesson's reference submitted the moment the worker has announced itself.
Reported per lesson: start to worker ready, start to verdict, POST to verdict,
the verdict, how many lessons the warm had computed by then, and the load
average before and after (the machine is often shared). `--no-warm` gives the
floor: the same without the warm. Prints Markdown and writes
artifacts/bench/first_verdict.json. Bounded: every wait has a deadline."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from e2e.amp_dojo_live import LiveApp  # noqa: E402
from latency import OPEN_LIMITS, learner, post_to_verdict  # noqa: E402

from grader.lesson.loader import load_all  # noqa: E402


def first_verdict(exercise, warm: bool, sandbox: str | None, timeout: float) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="amp-dojo-first-verdict-"))
    settings = {**OPEN_LIMITS, "TRUSTED_RUNS": "queue", "WARM_AT_START": warm}
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    app = LiveApp(workdir, settings=settings, sandbox=sandbox).start(timeout=300)
    try:
        ready = time.perf_counter() - started
        seconds, final, _sub = post_to_verdict(learner(app), exercise.id, exercise.reference, timeout=timeout)
        total = time.perf_counter() - started
        log = app.log_paths["worker0"].read_text(errors="replace")
    finally:
        app.stop()
    return {
        "lesson": exercise.id,
        "sandbox": app.sandbox,
        "warm": warm,
        "ready_s": round(ready, 2),
        "post_to_verdict_s": round(seconds, 2),
        "start_to_verdict_s": round(total, 2),
        "verdict": final.get("result_status") or final.get("status"),
        "lessons_warmed_by_then": log.count("trusted runs of "),
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| lesson | warm | start to ready | start to verdict | POST to verdict | verdict | lessons warmed | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['lesson']} | {'yes' if r['warm'] else 'no'} | {r['ready_s']} s | {r['start_to_verdict_s']} s | "
            f"{r['post_to_verdict_s']} s | {r['verdict']} | {r['lessons_warmed_by_then']} | "
            f"{r['load_1min_before']} to {r['load_1min_after']} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lessons", default="autocast,lr_scheduler_skips")
    parser.add_argument("--sandbox", default=None, help="bwrap (default where it runs), docker or local")
    parser.add_argument("--no-warm", action="store_true", help="the floor: no trusted runs computed at start")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a verdict may take")
    args = parser.parse_args(argv)
    exercises = load_all()
    rows = []
    for lesson in args.lessons.split(","):
        print(f"a fresh instance, then {lesson}'s reference...", file=sys.stderr)
        rows.append(first_verdict(exercises[lesson], not args.no_warm, args.sandbox, args.timeout))
        print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
    results = {
        "machine": {
            "cores": os.cpu_count(),
            "python": sys.version.split()[0],
            "onednn_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", ""),
        },
        "runs": rows,
    }
    out = ROOT / "artifacts" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "first_verdict.json").write_text(json.dumps(results, indent=2))
    print(table(rows))


if __name__ == "__main__":
    main()

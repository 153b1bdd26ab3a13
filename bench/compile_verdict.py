"""How long a compile lesson's verdict takes next to a plain lesson's, as a learner meets it: the lesson's
reference graded in a warm sandbox (the web worker's pool, its blank ready before the submission arrives),
and the whole `grader check` command (its one blank started as the command starts).

    python bench/compile_verdict.py [--lessons autocast,compile_autocast] [--sandboxes bwrap,docker] [--repeat 3]

Each lesson's trusted runs and its trusted compile cache are computed first and left out of the times (they
are computed once per machine, ahead of learners). Reported per sandbox and lesson: the median of `--repeat`
gradings from submission to verdict with a ready blank, and the median of `--repeat` whole `grader check`
commands; and each against the first lesson's (autocast's) on the same sandbox. Prints Markdown and writes
artifacts/bench/compile_verdict.json. The machine is often shared: the load average is printed beside."""

from __future__ import annotations

import argparse
import json
import os
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
from grader.sandboxes.kinds import make_launcher  # noqa: E402
from grader.sandboxes.pool import WarmPool  # noqa: E402


def warm_gradings(exercise, sandbox: str, repeat: int) -> tuple[str, list[float]]:
    """Seconds from submission to verdict, each with a blank of the lesson's kind ready beforehand."""
    pool = WarmPool(make_launcher(sandbox, allow_local=False), size=1, devices=("cpu",), compiler=exercise.compiles)
    try:
        first = runner.run(exercise, exercise.reference, device="cpu", launcher=pool)  # trusted runs, compile cache
        times = []
        for _ in range(repeat):
            if not pool.wait_until_ready("cpu", timeout=300, compiler=exercise.compiles):
                raise SystemExit(f"no warm {sandbox} blank for {exercise.id} within 300 s")
            began = time.perf_counter()
            result = runner.run(exercise, exercise.reference, device="cpu", launcher=pool)
            times.append(time.perf_counter() - began)
            if result.status != first.status:
                raise SystemExit(f"{exercise.id}: {result.status} after {first.status}")
        return first.status, times
    finally:
        pool.close()


def cli_checks(exercise, sandbox: str, repeat: int) -> list[float]:
    """Seconds of whole `grader check` commands (trusted runs kept in a cache folder of their own)."""
    with tempfile.TemporaryDirectory() as tmp:
        code = Path(tmp, f"{exercise.id}.py")
        code.write_text(exercise.reference)
        env = {**os.environ, "AMP_DOJO_CACHE": str(Path(tmp, "trusted")), "NO_COLOR": "1"}
        command = [sys.executable, "-m", "grader", "check", exercise.id, str(code), "--sandbox", sandbox, "--json"]
        times = []
        for i in range(repeat + 1):  # the first computes the trusted runs
            began = time.perf_counter()
            subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=False, timeout=900)
            if i:
                times.append(time.perf_counter() - began)
        return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lessons", default="autocast,compile_autocast")
    parser.add_argument("--sandboxes", default="bwrap,docker")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lessons = load_all()
    rows = []
    for sandbox in args.sandboxes.split(","):
        for lesson in args.lessons.split(","):
            load = os.getloadavg()[0]
            status, warm = warm_gradings(lessons[lesson], sandbox, args.repeat)
            cli = cli_checks(lessons[lesson], sandbox, args.repeat)
            rows.append(
                {
                    "sandbox": sandbox,
                    "lesson": lesson,
                    "verdict": status,
                    "warm_s": warm,
                    "cli_s": cli,
                    "load_before": load,
                    "load_after": os.getloadavg()[0],
                }
            )
    print(f"{os.cpu_count()} CPUs, ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '-')}")
    print("| sandbox | lesson | verdict | warm blank (s) | vs first | `grader check` (s) | vs first | load |")
    print("|---|---|---|---|---|---|---|---|")
    firsts: dict[str, dict] = {}
    for row in rows:
        first = firsts.setdefault(row["sandbox"], row)
        warm, cli = statistics.median(row["warm_s"]), statistics.median(row["cli_s"])
        print(
            f"| {row['sandbox']} | {row['lesson']} | {row['verdict']} | {warm:.2f} "
            f"| {warm / statistics.median(first['warm_s']):.1f}x | {cli:.2f} "
            f"| {cli / statistics.median(first['cli_s']):.1f}x | {row['load_before']:.1f}-{row['load_after']:.1f} |"
        )
    out = ROOT / "artifacts" / "bench" / "compile_verdict.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

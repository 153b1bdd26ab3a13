"""Calibration of the speedup check on a CPU: every lesson with a threshold for
fast CPUs (`min_speedup: {cpu_amx: ...}`) has its reference and its public FP32
baseline submitted as solutions, several gradings each, alone and beside a
second grading running at the same time. The reference must pass the speedup
check every time and the baseline must fail it every time (flips: 0); the
table shows the speedup's mean and spread, the lowest lower bound (the
reference's margin over the threshold), the highest upper bound (the
baseline's margin under it) and the rounds timing took before it stopped.

On a CPU whose 16-bit matmuls do not run on AMX (or with oneDNN capped, as the
test suite does) every row says "not applicable" and why: that is the
expected result there, not a failure.

    python bench/cpu_calibration.py [--repeats 5] [--sandbox bwrap] [--lessons autocast,...]
                                    [--output docs/cpu-calibration.md]"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench.gpu_check import fmt  # noqa: E402
from grader import runner  # noqa: E402
from grader.judge.devices import bf16_support, cpu_matmul_kernel, speed_kind  # noqa: E402
from grader.lesson.check_specs import FAST_CPU  # noqa: E402
from grader.lesson.loader import load_all  # noqa: E402
from grader.sandboxes.kinds import make_launcher  # noqa: E402
from grader.sandboxes.pool import WarmPool  # noqa: E402

SUBMITTED = {"reference": "reference", "FP32 baseline": "baseline"}
# A flip is a verdict the submission must never get: the reference anything but a pass, the baseline a pass. The
# baseline may also end as an error: on a lesson with a GradScaler its run stops at the forced overflow, which it
# does not skip, so nothing after it is timed.
FLIP = {"reference": lambda status: status != "pass", "FP32 baseline": lambda status: status == "pass"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sandbox", default="bwrap", help="docker, bwrap or local")
    p.add_argument("--lessons", default="", help="comma-separated lesson ids (default: every one timed on fast CPUs)")
    p.add_argument("--output", type=Path, default=ROOT / "docs" / "cpu-calibration.md")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    return args


class SecondGrading:
    """Grades the lesson's reference over and over on a thread of its own, as another learner's submission would
    be graded beside the measured one."""

    def __init__(self, exercise, launcher):
        self.exercise, self.launcher = exercise, launcher
        self.stop, self.done = threading.Event(), 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self.stop.is_set():
            runner.run(self.exercise, self.exercise.reference, device="cpu", launcher=self.launcher)
            self.done += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def row(lesson: str, submitted: str, load: str, results: list) -> dict:
    speed = [r.check("speedup") for r in results]
    timed = [c for c in speed if c is not None and c.status in ("pass", "fail")]

    def values(key):
        return [float(c.measured[key]) for c in timed if isinstance(c.measured.get(key), (int, float))]

    statuses = [c.status if c is not None else "missing" for c in speed]
    applicable = any(s != "not_applicable" for s in statuses)
    flips = sum(FLIP[submitted](s) for s in statuses) if applicable else sum(s != "not_applicable" for s in statuses)
    ratios = values("speedup")
    return {
        "lesson": lesson,
        "submitted": submitted,
        "load": load,
        "statuses": statuses,
        "flips": flips,
        "speedup_mean": statistics.fmean(ratios) if ratios else None,
        "speedup_cv": statistics.pstdev(ratios) / statistics.fmean(ratios) if len(ratios) > 1 else None,
        "low_min": min(values("ci95_low"), default=None),
        "high_max": max(values("ci95_high"), default=None),
        "rounds": values("rounds"),
        "seconds_mean": statistics.fmean(r.duration_s for r in results),
        "why": next((c.message for c in speed if c is not None and c.status == "not_applicable"), ""),
        "error": next((c.message for c in speed if c is not None and c.status == "error"), ""),
        "errors": sorted({r.error.message[:300] for r in results if getattr(r, "error", None) is not None}),
    }


def report(rows: list[dict], args) -> str:
    kernel = cpu_matmul_kernel("bfloat16")
    head = [
        "lesson",
        "submitted",
        "load",
        "speedup check",
        "flips",
        "speedup mean",
        "speedup CV",
        "lowest 95% bound",
        "highest 95% bound",
        "rounds (mean, max)",
        "s per grading",
    ]
    lines = [
        "# CPU calibration",
        "",
        f"Made by `bench/cpu_calibration.py` on {datetime.date.today().isoformat()}: {bf16_support().describe()}; "
        f"oneDNN's bfloat16 matmul kernel: {kernel.implementation or 'none'} (device kind {speed_kind('cpu', 'bfloat16')}); "
        f"torch {torch.__version__}; {args.sandbox} sandbox; {args.repeats} gradings per row; 'beside a second "
        "grading': another grading of the reference runs at the same time.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        counts = {s: r["statuses"].count(s) for s in dict.fromkeys(r["statuses"])}
        rounds = r["rounds"]
        cells = [
            r["lesson"],
            r["submitted"],
            r["load"],
            ", ".join(f"{s} {n}/{len(r['statuses'])}" for s, n in counts.items()),
            str(r["flips"]),
            fmt(r["speedup_mean"]),
            fmt(r["speedup_cv"], ".1%") if r["speedup_cv"] is not None else "-",
            fmt(r["low_min"]),
            fmt(r["high_max"]),
            f"{statistics.fmean(rounds):.1f}, {max(rounds):.0f}" if rounds else "-",
            fmt(r["seconds_mean"], ".1f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    whys = sorted({r["why"] for r in rows if r["why"]})
    if whys:
        lines += ["", "Not applicable here:", *[f"- {w}" for w in whys]]
    errors = sorted({f"{r['lesson']}: {r['error']}" for r in rows if r["error"]})
    if errors:
        lines += ["", "Speedup checks that ended as an error (never a pass):", *[f"- {e}" for e in errors]]
    raised = sorted({f"{r['lesson']} ({r['submitted']}, {r['load']}): {e}" for r in rows for e in r.get("errors", [])})
    if raised:
        lines += ["", "Gradings that ended as an error, and why:", *[f"- {e}" for e in raised]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse_args(argv)
    lessons = load_all()
    timed = [i for i, ex in lessons.items() if (s := ex.check("speedup")) is not None and FAST_CPU in s.min_speedup]
    wanted = [x for x in args.lessons.split(",") if x] or timed
    unknown = [x for x in wanted if x not in lessons]
    if unknown:
        print(f"cpu-calibration: unknown lessons: {', '.join(unknown)}", file=sys.stderr)
        return 2
    launcher = WarmPool(make_launcher(args.sandbox, allow_local=True), size=1, devices=("cpu",))
    other = WarmPool(make_launcher(args.sandbox, allow_local=True), size=1, devices=("cpu",))
    rows = []
    try:
        for lesson in wanted:
            ex = lessons[lesson]
            runner.run(ex, ex.reference, device="cpu", launcher=launcher)  # trusted runs computed, not measured
            for load in ("alone", "beside a second grading"):
                for submitted, field in SUBMITTED.items():
                    results = []
                    for i in range(args.repeats):
                        print(f"  .. {lesson} {submitted} {load} {i + 1}/{args.repeats}", file=sys.stderr, flush=True)
                        if load == "alone":
                            results.append(runner.run(ex, getattr(ex, field), device="cpu", launcher=launcher))
                        else:
                            with SecondGrading(ex, other):
                                results.append(runner.run(ex, getattr(ex, field), device="cpu", launcher=launcher))
                    rows.append(row(lesson, submitted, load, results))
    finally:
        launcher.close()
        other.close()
    text = report(rows, args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    return 0 if rows and not any(r["flips"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

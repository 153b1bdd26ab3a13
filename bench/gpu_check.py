"""Calibration run for a GPU (or any device): every lesson's reference graded
several times in each available sandbox, reporting what the thresholds must
be tuned from: speedup (mean and coefficient of variation), its 95% lower
bound, memory ratio, parity, and verdict flips between repeats. The project
had never graded on a GPU: run this (via scripts/gpu-check) whenever one is at
hand, and tune the CUDA thresholds and `workload.cuda` from its table.

    python bench/gpu_check.py [--device cuda] [--repeats 5] [--sandboxes docker,bwrap]
                              [--lessons autocast,...] [--budget 10] [--output docs/gpu-calibration.md]"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from grader import runner  # noqa: E402
from grader.judge.devices import bf16_support  # noqa: E402
from grader.judge.timing import TimingPlan  # noqa: E402
from grader.lesson.loader import load_all  # noqa: E402
from grader.sandboxes.kinds import SANDBOXES, make_launcher, unavailable_reason  # noqa: E402
from grader.sandboxes.pool import WarmPool  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sandboxes", default="docker,bwrap", help="comma-separated; unavailable ones are reported")
    p.add_argument("--lessons", default="", help="comma-separated lesson ids (default: all)")
    p.add_argument("--budget", type=float, default=10.0, help="seconds of timing rounds per grading at most")
    p.add_argument("--output", type=Path, default=ROOT / "docs" / "gpu-calibration.md")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    return args


def summarize(lesson: str, sandbox: str, results: list) -> dict:
    """One row of the table from the repeated gradings of one reference."""

    def values(check_id, key):
        out = []
        for r in results:
            c = r.check(check_id)
            if c is not None and c.status != "not_applicable" and isinstance(c.measured.get(key), (int, float)):
                out.append(float(c.measured[key]))
        return out

    # a profiling lesson times its fixed step against the given step (step_time) instead of the baseline
    timed = "speedup" if values("speedup", "speedup") else "step_time"
    speed = values(timed, "speedup")
    statuses = [r.status for r in results]
    mode = max(set(statuses), key=statuses.count)
    return {
        "lesson": lesson,
        "sandbox": sandbox,
        "repeats": len(results),
        "verdict": mode,
        "flips": sum(s != mode for s in statuses),
        "speedup_mean": statistics.fmean(speed) if speed else None,
        "speedup_cv": statistics.pstdev(speed) / statistics.fmean(speed) if len(speed) > 1 else None,
        "speedup_low_min": min(values(timed, "ci95_low"), default=None),
        "memory_ratio": max(values("memory", "ratio"), default=None),
        "parity_update_max": max(values("parity", "max_update_rel_diff"), default=None),
        "seconds_mean": statistics.fmean(r.duration_s for r in results),
        "errors": sorted({r.error.message[:80] for r in results if r.error}),
    }


def fmt(value, spec=".3g") -> str:
    return "-" if value is None else format(value, spec)


def ranked_notes(rows: list[dict], device: str) -> list[str]:
    """How the lessons that run as several ranks (DDP, FSDP2) were run here: nccl needs a GPU per rank, else
    the ranks share one GPU over gloo. Their CUDA workloads are uncalibrated until a run like this one says so."""
    if not device.startswith("cuda"):
        return []
    lessons = load_all()
    ranked = sorted({r["lesson"] for r in rows if r["lesson"] in lessons and lessons[r["lesson"]].workload.ranks > 1})
    if not ranked:
        return []
    gpus = torch.cuda.device_count()
    how = "nccl, one GPU per rank" if gpus >= 2 else "gloo, every rank on the one GPU (nccl needs one GPU per rank)"
    return [f"\nRanked lessons ({', '.join(ranked)}) ran over {how}; {gpus} GPU(s) seen. Uncalibrated before this run."]


def report(rows: list[dict], skipped: dict[str, str], device: str, args) -> str:
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else bf16_support().describe()
    head = [
        "lesson",
        "sandbox",
        "verdict",
        "flips",
        "speedup mean",
        "speedup CV",
        "lowest 95% bound",
        "memory ratio",
        "parity update (max)",
        "s per grading",
    ]
    lines = [
        "# GPU calibration",
        "",
        f"Made by `scripts/gpu-check` on {datetime.date.today().isoformat()}: {name}; torch {torch.__version__}; "
        f"device {device}; {args.repeats} gradings of each reference per sandbox; timing budget {args.budget:g} s.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        cells = [
            r["lesson"],
            r["sandbox"],
            r["verdict"],
            str(r["flips"]),
            fmt(r["speedup_mean"]),
            fmt(r["speedup_cv"], ".1%") if r["speedup_cv"] is not None else "-",
            fmt(r["speedup_low_min"]),
            fmt(r["memory_ratio"]),
            fmt(r["parity_update_max"], ".2%") if r["parity_update_max"] is not None else "-",
            fmt(r["seconds_mean"], ".1f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for sandbox, why in skipped.items():
        lines.append(f"\nNot run in the {sandbox} sandbox: {why}")
    lines += ranked_notes(rows, device)
    errors = [f"- {r['lesson']} ({r['sandbox']}): {e}" for r in rows for e in r["errors"]]
    if errors:
        lines += ["", "Errors:", *errors]
    return "\n".join(lines) + "\n"


def docker_cuda_problem(device: str) -> str | None:
    """Why the docker sandbox cannot grade on `device` although its image is current (None: it can). A container
    of the grading image, given the GPU as the sandbox gives it, must import a CUDA build of torch that sees it:
    a CPU image (CI's offline build), a host without the NVIDIA Container Toolkit or with a driver older than the
    wheels' CUDA (docs/operations.md) would otherwise fail every grading of the table."""
    if not device.startswith("cuda"):
        return None
    import docker
    from grader.sandboxes.docker_sandbox import IMAGE, client, host_gpu

    probe = "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"
    gpu = docker.types.DeviceRequest(device_ids=[host_gpu(device)], capabilities=[["gpu"]])
    container = None
    try:
        container = client().containers.create(
            IMAGE, ["python3", "-c", probe], network_mode="none", device_requests=[gpu]
        )
        container.start()
        container.wait(timeout=300)
        out = container.logs(stdout=True, stderr=False)
    except Exception as exc:  # noqa: BLE001 - any failure to run one is the reason to report
        return f"a container of {IMAGE} given the GPU did not run ({type(exc).__name__}: {exc})"[:400]
    finally:
        if container is not None:
            container.remove(force=True)  # also one the engine created but could not start
    version, cuda, seen = out.decode().split()[-3:]
    if cuda == "None":
        return f"the image {IMAGE} holds a CPU build of torch ({version}): build it with `docker build .`"
    if seen != "True":
        return f"torch {version} in {IMAGE} sees no GPU: the host's driver must run CUDA {cuda} (docs/operations.md)"
    return None


def main(argv=None) -> int:
    args = parse_args(argv)
    device = runner.resolve_device(args.device)
    lessons = load_all()
    wanted = [x for x in args.lessons.split(",") if x] or list(lessons)
    unknown = [x for x in wanted if x not in lessons]
    if unknown:
        print(f"gpu-check: unknown lessons: {', '.join(unknown)}", file=sys.stderr)
        return 2
    rows, skipped = [], {}
    for sandbox in [s for s in args.sandboxes.split(",") if s]:
        why = unavailable_reason(sandbox) if sandbox in SANDBOXES else f"unknown sandbox (use {', '.join(SANDBOXES)})"
        if why is None and sandbox == "docker":
            why = docker_cuda_problem(device)
        if why is not None:
            skipped[sandbox] = why
            continue
        # warm sandboxes, as the web app's workers grade (start-up is not what is being calibrated)
        launcher = WarmPool(make_launcher(sandbox, allow_local=True), size=1, devices=(device,))
        for lesson in wanted:
            ex = lessons[lesson]
            results = []
            for i in range(args.repeats):
                print(f"  .. {sandbox} {lesson} {i + 1}/{args.repeats}", file=sys.stderr, flush=True)
                results.append(
                    runner.run(
                        ex, ex.reference, device=device, launcher=launcher, timing_plan=TimingPlan(budget_s=args.budget)
                    )
                )
            rows.append(summarize(lesson, sandbox, results))
        launcher.close()
    text = report(rows, skipped, device, args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    return 0 if rows and all(r["verdict"] == "pass" and not r["flips"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Time from POST to verdict, side by side: the old path (a sandbox started per
submission, trusted runs kept in memory only) against the fast one (warm
single-use sandboxes, trusted runs kept in the queue's storage), in one run,
on one machine, loopback only.

    python bench/latency.py [--lessons autocast,grad_scaler] [--repeats 5] [--crowd 20] [--window 10]

For each path it starts the real app (`amp-dojo serve` + `amp-dojo worker`, as
tests/e2e does; sandbox bwrap, else local; device cpu) and measures:

- one learner: each lesson's reference submitted `--repeats` times in a row
  (after one unmeasured submission that computes the lesson's trusted runs), a
  learner's pause of `--pause` seconds between them; POST to the `done` event;
- a restart: app and worker stopped and started again on the same database and
  queue, then the first submission's POST to verdict;
- a crowd: `--crowd` learners (own sessions, each from its own loopback
  address as bench/class_load.py spreads them) each submitting the autocast
  reference at a random moment within `--window` seconds, each followed as the
  page follows it (the stream, polling where it is refused or ends early); a
  verdict is lost only when it never arrives; p50 and p95, and how many came by
  polling.

Then `grader check autocast` wall time from the command line, with an empty and
with a warm trusted-run cache. Prints Markdown and writes
artifacts/bench/latency.json. Bounded: every wait has a deadline."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from e2e.amp_dojo_live import LiveApp  # noqa: E402
from webapp_load import Client, Submission, crowd_address, follow, percentile  # noqa: E402

from grader.lesson.loader import load_all  # noqa: E402

OPEN_LIMITS = {
    "RATE_LIMIT": 10_000,
    "IP_RATE_LIMIT": 100_000,
    "MAX_WAITING_PER_LEARNER": 0,
    "MAX_WAITING_PER_IP": 0,
    "QUEUE_MAX": 500,
    "MAX_STREAMS": 64,
    "MAX_STREAMS_PER_LEARNER": 64,
}
PATHS = {
    "old path": {"POOL_SIZE": 0, "GRADING_CONCURRENCY": 1, "TRUSTED_RUNS": "", "WARM_AT_START": False},
    "warm path": {"POOL_SIZE": None, "GRADING_CONCURRENCY": None, "TRUSTED_RUNS": "queue", "WARM_AT_START": False},
}


class Refused(RuntimeError):
    """The server did not accept the submission (its POST's answer): refused, not lost."""


class Lost(RuntimeError):
    """The submission was accepted and its verdict never arrived, by stream or by polling, within the wait."""


def post_to_verdict(client: Client, lesson: str, code: str, timeout: float = 300.0) -> tuple[float, dict, Submission]:
    """Seconds from the POST to the verdict (the stream's `done` event, or the poll that found it, as the page
    follows it), the final record, and the followed submission (whether polling brought the verdict)."""
    sub = Submission(0, lesson, client)
    started = time.perf_counter()
    status, _h, data, _elapsed = client.submit(lesson, code)
    if status != 202:
        raise Refused(f"submission refused: {status} {data}")
    sub.id, sub.accepted_at = data["id"], time.perf_counter()
    stop = threading.Event()
    thread = threading.Thread(target=follow, args=(sub, stop, time.monotonic() + timeout), daemon=True)
    thread.start()
    thread.join(timeout + 5)
    stop.set()
    final = client.get_json(f"/api/submissions/{sub.id}")
    if sub.done_s is None:
        raise Lost(f"no verdict for {sub.id} within {timeout} s: {final.get('status')}")
    return sub.accepted_at - started + sub.done_s, final, sub


def learner(app: LiveApp, address: str | None = None) -> Client:
    client = Client(app.url, address=address)
    client.start_session()
    return client


def single(app: LiveApp, lessons, repeats: int, pause: float) -> dict:
    out = {}
    client = learner(app)
    for ex in lessons:
        post_to_verdict(client, ex.id, ex.reference)  # computes the lesson's trusted runs (not measured)
        times = []
        for _ in range(repeats):
            time.sleep(pause)
            seconds, final, _sub = post_to_verdict(client, ex.id, ex.reference)
            if final.get("result_status") != "pass":
                raise RuntimeError(f"{ex.id}: the reference did not pass: {final.get('result_status')}")
            times.append(seconds)
        times.sort()
        out[ex.id] = {"p50_s": round(percentile(times, 50), 2), "max_s": round(times[-1], 2), "n": len(times)}
    return out


def crowd(
    app: LiveApp,
    exercise,
    learners: int,
    window: float,
    seed: int = 1,
    code: str | None = None,
    timeout: float = 600.0,
    spread: bool = True,
) -> dict:
    """`learners` learners, each on its own loopback address (`spread`), each posting `code` (the lesson's reference)
    once at a random moment within `window` seconds and following it as the page does."""
    rng = random.Random(seed)
    offsets = sorted(rng.uniform(0, window) for _ in range(learners))
    clients = [learner(app, crowd_address(i) if spread else None) for i in range(learners)]
    results: list[tuple[float | None, str, bool]] = [None] * learners
    begin = time.perf_counter()

    def one(i):
        time.sleep(max(0.0, begin + offsets[i] - time.perf_counter()))
        try:
            seconds, final, sub = post_to_verdict(clients[i], exercise.id, code or exercise.reference, timeout)
            results[i] = (seconds, final.get("result_status") or final.get("status"), sub.polled)
        except (Refused, Lost) as exc:
            results[i] = (None, f"{type(exc).__name__}: {exc}", False)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(learners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 60)
    times = sorted(r[0] for r in results if r and r[0] is not None)
    return {
        "learners": learners,
        "window_s": window,
        "verdicts": len(times),
        "by_polling": sum(1 for r in results if r and r[0] is not None and r[2]),
        "passed": sum(1 for r in results if r and r[1] == "pass"),
        "p50_s": round(percentile(times, 50), 2),
        "p95_s": round(percentile(times, 95), 2),
        "max_s": round(times[-1], 2) if times else None,
        "refused": [r[1] for r in results if r and r[1].startswith("Refused")],
        "lost": [r[1] if r else "no answer" for r in results if not r or r[1].startswith("Lost")],
    }


def measure_path(name: str, settings: dict, lessons, args, sandbox: str | None) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix=f"amp-dojo-latency-{name.split()[0]}-"))
    config = {**OPEN_LIMITS, **{k: v for k, v in settings.items() if v is not None}}
    app = LiveApp(workdir, settings=config, sandbox=sandbox).start(timeout=120)
    try:
        out = {"sandbox": app.sandbox, "single": single(app, lessons, args.repeats, args.pause)}
    finally:
        app.stop()
    app = LiveApp(workdir, settings=config, sandbox=sandbox).start(timeout=120)  # the restart
    try:
        time.sleep(args.pause)
        seconds, final, _sub = post_to_verdict(learner(app), lessons[0].id, lessons[0].reference)
        out["after_restart"] = {"lesson": lessons[0].id, "s": round(seconds, 2), "status": final.get("result_status")}
        out["crowd"] = crowd(app, lessons[0], args.crowd, args.window)
    finally:
        app.stop()
    return out


def grader_check(exercise, sandbox: str) -> dict:
    cache = Path(tempfile.mkdtemp(prefix="amp-dojo-cache-"))
    code = cache / "solution.py"
    code.write_text(exercise.reference)
    env = {**os.environ, "AMP_DOJO_CACHE": str(cache / "trusted")}
    times = []
    for _ in range(2):  # an empty cache, then a warm one
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "grader", "check", exercise.id, str(code), "--device", "cpu", "--sandbox", sandbox],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        times.append(round(time.perf_counter() - started, 2))
        if done.returncode != 0:
            raise RuntimeError(f"grader check failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return {"lesson": exercise.id, "sandbox": sandbox, "cold_cache_s": times[0], "warm_cache_s": times[1]}


def table(results: dict) -> str:
    names = list(results["paths"])
    lines = ["| measure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    first = results["paths"][names[0]]
    for lesson in first["single"]:
        lines.append(
            f"| {lesson}: POST to verdict, p50 (max) | "
            + " | ".join(
                f"{results['paths'][n]['single'][lesson]['p50_s']} s ({results['paths'][n]['single'][lesson]['max_s']} s)"
                for n in names
            )
            + " |"
        )
    lines.append(
        "| first submission after a restart | "
        + " | ".join(f"{results['paths'][n]['after_restart']['s']} s" for n in names)
        + " |"
    )
    c = first["crowd"]
    lines.append(
        f"| {c['learners']} learners within {c['window_s']:g} s: p50 / p95 / verdicts | "
        + " | ".join(
            f"{results['paths'][n]['crowd']['p50_s']} s / {results['paths'][n]['crowd']['p95_s']} s / "
            f"{results['paths'][n]['crowd']['verdicts']} of {c['learners']} "
            f"({results['paths'][n]['crowd']['by_polling']} by polling)"
            for n in names
        )
        + " |"
    )
    if "grader_check" in results:
        g = results["grader_check"]
        lines.append(
            f"\n`grader check {g['lesson']}` ({g['sandbox']}): empty cache {g['cold_cache_s']} s, "
            f"warm cache {g['warm_cache_s']} s"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lessons", default="autocast,grad_scaler,grad_accumulation")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pause", type=float, default=3.0, help="a learner's pause between submissions")
    parser.add_argument("--crowd", type=int, default=20)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--sandbox", default=None, help="bwrap (default where it runs), docker or local")
    parser.add_argument("--no-cli", action="store_true", help="skip the grader check timing")
    args = parser.parse_args(argv)
    exercises = load_all()
    lessons = [exercises[i] for i in args.lessons.split(",")]
    results = {
        "machine": {
            "cores": os.cpu_count(),
            "python": sys.version.split()[0],
            "onednn_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", ""),
        },
        "paths": {},
    }
    for name, settings in PATHS.items():
        print(f"measuring the {name}...", file=sys.stderr)
        results["paths"][name] = measure_path(name, settings, lessons, args, args.sandbox)
    if not args.no_cli:
        sandbox = results["paths"]["warm path"]["sandbox"]
        results["grader_check"] = grader_check(lessons[0], sandbox)
    out = ROOT / "artifacts" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "latency.json").write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()

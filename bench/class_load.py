"""A class on one server, with one hostile learner and a slow-client flood, on loopback only.

    python bench/class_load.py [--learners 30] [--shared 10] [--runs 3] [--window 60] [--slow 110] [--lesson autocast]

Starts the real app (`amp-dojo serve` + one `amp-dojo worker`, as tests/e2e does: sandbox bwrap, else local;
device cpu) with the platform's default limits, and measures, at once:

- `--learners` learners, each with its own session; `--shared` of them share one client address (a school's NAT:
  their sockets are bound to 127.0.0.50), the others each have their own (127.0.0.10, .11, ...). Each starts at a
  random moment within the first third of `--window` seconds and submits the lesson's reference `--runs` times
  (`--lesson`, autocast by default; compile_autocast for a class of compiled gradings),
  waiting for each verdict (polling, as the page does when no stream slot is free) and pausing a few seconds
  between runs, as a learner fixing their code would;
- one hostile learner (its own address, on autocast whatever the class submits; its gradings still running at the end
  are "unfinished") who, from the start, keeps the longest grading the limits allow going:
  a right answer that sleeps in every step, as slowly as the per-step limit allows, so each of its gradings lasts
  until the grader's whole-grading budget ends it; it submits again as soon as it may, and keeps its second
  allowed submission waiting;
- `--slow` connections (from 127.0.0.99) that send a request's headers a byte every few seconds and never finish.

Reported, per group: verdicts that arrived, refusals, and POST-to-verdict p50/p95/max; the longest a learner's
submission waited in the queue (202 to `started`) while a hostile grading ran; and whether every accepted
submission ended. Prints Markdown and writes artifacts/bench/class_load.json. Every loop is bounded in count and
time, and every connection stays on this machine."""

from __future__ import annotations

import argparse
import json
import random
import socket
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
from webapp_load import Client, percentile  # noqa: E402

from grader.lesson.loader import load_all  # noqa: E402

LESSON = "autocast"
SHARED_ADDRESS = "127.0.0.50"
HOSTILE_ADDRESS = "127.0.0.60"
SLOW_ADDRESS = "127.0.0.99"
HOSTILE = """
import time
import torch
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    time.sleep(55)  # just under the per-step limit (60 s)
    return loss
"""


def bound_client(base: str, address: str) -> Client:
    """A learner's session whose connections leave from `address` (a loopback address of its own, or shared)."""
    return Client(base, address=address)


class Run:
    def __init__(self, group: str):
        self.group = group
        self.status = None  # the POST's status
        self.id = None
        self.posted = None  # time.monotonic() of the POST
        self.started = None  # ... when the record first said running
        self.ended = None  # ... when it had its verdict
        self.final = None  # done / error / None (never ended)


def wait_verdict(client: Client, run: Run, deadline: float) -> None:
    while time.monotonic() < deadline:
        data = client.get_json(f"/api/submissions/{run.id}")
        if data["status"] == "running" and run.started is None:
            run.started = time.monotonic()
        if data["status"] in ("done", "error"):
            run.ended, run.final = time.monotonic(), data["status"]
            run.started = run.started or run.ended
            return
        time.sleep(0.25)


def learner(base: str, address: str, group: str, code: str, args, t0: float, runs: list, lock) -> None:
    rng = random.Random(address + group + str(len(runs)))
    client = bound_client(base, address)
    client.start_session()
    time.sleep(max(0.0, t0 + rng.uniform(0, args.window / 3) - time.monotonic()))
    for _ in range(args.runs):
        run = Run(group)
        run.posted = time.monotonic()
        run.status, _headers, data, _elapsed = client.submit(args.lesson, code)
        with lock:
            runs.append(run)
        if run.status != 202:
            time.sleep(2)
            continue
        run.id = data["id"]
        wait_verdict(client, run, run.posted + args.deadline)
        time.sleep(rng.uniform(1, 6))


def hostile(base: str, args, stop: threading.Event, runs: list, lock) -> None:
    """Keeps two of its slow submissions in the system at all times, as long as the limits let it."""
    client = bound_client(base, HOSTILE_ADDRESS)
    client.start_session()
    active: list[Run] = []
    while not stop.is_set():
        for run in list(active):
            data = client.get_json(f"/api/submissions/{run.id}")
            if data["status"] == "running" and run.started is None:
                run.started = time.monotonic()
            if data["status"] in ("done", "error"):
                run.ended, run.final = time.monotonic(), data["status"]
                active.remove(run)
        if len(active) < 2:
            run = Run("hostile")
            run.posted = time.monotonic()
            run.status, _h, data, _e = client.submit(LESSON, HOSTILE)  # on autocast, whatever the class does
            with lock:
                runs.append(run)
            if run.status == 202:
                run.id = data["id"]
                active.append(run)
        stop.wait(1.0)


def slow_clients(port: int, count: int, stop: threading.Event, opened: list) -> None:
    """Connections that send a request's first line a byte every few seconds, until `stop`."""
    socks = []
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(SLOW_ADDRESS, 0))
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        except OSError:
            break
    opened.append(len(socks))
    while not stop.wait(3.0):
        for s in list(socks):
            try:
                s.sendall(b"X")
            except OSError:
                socks.remove(s)
    for s in socks:
        s.close()


def summary(runs: list[Run], group: str) -> dict:
    mine = [r for r in runs if r.group == group]
    verdicts = sorted(r.ended - r.posted for r in mine if r.final)
    waits = sorted(r.started - r.posted for r in mine if r.final)
    return {
        "posted": len(mine),
        "accepted": sum(r.status == 202 for r in mine),
        "refused": sum(r.status not in (202, None) for r in mine),
        "verdicts": len(verdicts),
        "unfinished": sum(r.status == 202 and not r.final for r in mine),
        "p50_s": round(percentile(verdicts, 50), 2),
        "p95_s": round(percentile(verdicts, 95), 2),
        "max_s": round(verdicts[-1], 2) if verdicts else None,
        "max_queue_wait_s": round(waits[-1], 2) if waits else None,
    }


def waited_behind_hostile(runs: list[Run]) -> float:
    """The longest a learner's submission waited in the queue while a hostile grading was running."""
    now = time.monotonic()
    hostile_spans = [(r.started, r.ended or now) for r in runs if r.group == "hostile" and r.started]
    worst = 0.0
    for r in runs:
        if r.group == "hostile" or not r.final:
            continue
        if any(s < r.started and e > r.posted for s, e in hostile_spans):
            worst = max(worst, r.started - r.posted)
    return round(worst, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--shared", type=int, default=10, help="learners behind one address")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--slow", type=int, default=110)
    parser.add_argument("--deadline", type=float, default=600.0, help="longest wait for one verdict")
    parser.add_argument("--no-hostile", action="store_true", help="the control run: the class alone")
    parser.add_argument("--lesson", default=LESSON, help="the lesson whose reference the class submits")
    args = parser.parse_args()
    code = load_all()[args.lesson].reference
    runs: list[Run] = []
    lock, stop = threading.Lock(), threading.Event()
    with tempfile.TemporaryDirectory() as tmp, LiveApp(Path(tmp), settings={"WARM_AT_START": True}) as app:
        warm = Client(app.url)
        warm.start_session()
        _s, _h, data, _e = warm.submit(args.lesson, code)  # the lesson's trusted runs, before anyone is timed
        wait_verdict(warm, _warm_run(data), time.monotonic() + 300)
        opened: list[int] = []
        slow = threading.Thread(target=slow_clients, args=(app.port, args.slow, stop, opened), daemon=True)
        slow.start()
        bad = threading.Thread(target=hostile, args=(app.url, args, stop, runs, lock), daemon=True)
        if not args.no_hostile:
            bad.start()
            time.sleep(2)  # the hostile learner's first grading is under way
        t0 = time.monotonic()
        threads = []
        for i in range(args.learners):
            shared = i < args.shared
            address = SHARED_ADDRESS if shared else f"127.0.0.{10 + i}"
            group = "shared address" if shared else "own address"
            threads.append(
                threading.Thread(
                    target=learner, args=(app.url, address, group, code, args, t0, runs, lock), daemon=True
                )
            )
        for t in threads:
            t.start()
        for t in threads:
            t.join(args.deadline + args.window)
        stop.set()
        if bad.is_alive():
            bad.join(30)
        slow.join(10)
        elapsed = time.monotonic() - t0
    out = {
        "learners": args.learners,
        "shared": args.shared,
        "runs": args.runs,
        "slow_connections": opened[:1],
        "hostile": not args.no_hostile,
        "seconds": round(elapsed, 1),
        "groups": {g: summary(runs, g) for g in ("own address", "shared address", "hostile")},
        "longest_wait_behind_hostile_s": waited_behind_hostile(runs),
    }
    who = "no hostile learner (control)" if args.no_hostile else "one hostile learner"
    print(
        f"{args.lesson}: {args.learners} learners ({args.shared} behind one address) x {args.runs} runs, {who}, "
        f"{out['slow_connections']} slow connections; {out['seconds']} s\n"
    )
    print(
        "| group | posted | accepted | refused | verdicts | unfinished | p50 s | p95 s | max s | longest queue wait s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for group, s in out["groups"].items():
        print(
            f"| {group} | {s['posted']} | {s['accepted']} | {s['refused']} | {s['verdicts']} | {s['unfinished']} | "
            f"{s['p50_s']} | {s['p95_s']} | {s['max_s']} | {s['max_queue_wait_s']} |"
        )
    print(
        f"\nlongest a learner waited in the queue while a hostile grading ran: {out['longest_wait_behind_hostile_s']} s"
    )
    target = ROOT / "artifacts" / "bench"
    target.mkdir(parents=True, exist_ok=True)
    (target / ("class_load_control.json" if args.no_hostile else "class_load.json")).write_text(
        json.dumps(out, indent=2) + "\n"
    )
    learners_ok = all(
        out["groups"][g]["unfinished"] == 0 and out["groups"][g]["verdicts"] == out["groups"][g]["posted"]
        for g in ("own address", "shared address")
    )
    return 0 if learners_ok else 1


def _warm_run(data: dict) -> Run:
    run = Run("warm-up")
    run.id = data["id"]
    return run


if __name__ == "__main__":
    sys.exit(main())

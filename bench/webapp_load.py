"""Load test of the web app on loopback: page and API latency while submissions
are being graded, then the queue's behaviour when it is full.

    python bench/webapp_load.py [--duration 60] [--submissions 6] [--concurrency 8] [--queue-max 5]

Starts the real app the way tests/e2e does (`amp-dojo serve` + one `amp-dojo
worker` as subprocesses, temporary database and SQLite queue, sandbox bwrap, else
local where bubblewrap cannot run, device cpu), on a free 127.0.0.1 port; nothing
leaves the machine.

Phase 1 (`--duration` seconds): `--submissions` reference solutions (cycling
through the lessons) are posted through the JSON API, each from its own session
(own cookie and CSRF token, so the per-learner RATE_LIMIT is not what is
measured) and its own loopback address (127.0.0.10, .11, ...: the per-address
limits see a classroom, not one machine), and each is followed as the page follows
it: its SSE stream, and polling where the stream is refused or ends early. Meanwhile
`--concurrency` client threads request, round robin, the lesson list page, a
lesson page, /api/lessons and /api/submissions/<id> (as the submission's owner).
Reported: p50/p95/max latency and request count per endpoint, and for each
submission the time from the 202 to `started` and to `done`.

Phase 2: a fresh app with QUEUE_MAX=`--queue-max`; `--queue-max` + `--overflow`
submissions are posted at once from distinct sessions. Reported: the status
codes (a full queue answers 429 with Retry-After) and that every accepted
submission still ends done or error.

Phase 3 (classroom, bench/classroom_phase.py), on SQLite and on PostgreSQL (a
throwaway local server, tests/postgres_server.py): a course of `--learners`
learners with `--per-learner` graded submissions each, written into the
database; signed-in learner pages, the instructor's dashboard, a learner's page
and the gradebook, first one request at a time, then at `--classroom-rate`
requests per second (open loop) for `--classroom-duration` seconds. Reported:
p50/p95/max per page; any p95 over `--max-p95-ms` (50) is a PROBLEM.

    python bench/webapp_load.py --phases classroom      # only phase 3 (a minute)

Prints Markdown tables and writes artifacts/bench/webapp_load.json."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
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

from grader.lesson.loader import load_all  # noqa: E402

try:
    import requests
except ImportError:  # the standard library does the same, a little more verbosely
    requests = None

CSRF_HEADER = "X-CSRF-Token"
SERVER_THREADS = 16  # `amp-dojo serve --threads`, as LiveApp starts it


# ---------- an HTTP client with its own cookies: requests, else urllib ----------


class Client:
    """One browser-like session: its own cookie jar (so its own anonymous learner)."""

    def __init__(self, base: str, cookies=None, address: str | None = None):
        self.base = base
        self.csrf = None
        self.address = address  # the loopback address its connections leave from (None: the system's choice)
        if requests is not None:
            self.session = requests.Session()
            if cookies is not None:
                self.session.cookies.update(cookies)
            if address is not None:
                self.session.mount("http://", _bound_adapter(address))
        elif address is not None:
            raise RuntimeError("a learner on an address of its own needs the requests package")
        else:
            import http.cookiejar
            import urllib.request

            self.jar = http.cookiejar.CookieJar()
            for cookie in cookies or ():
                self.jar.set_cookie(cookie)
            self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def cookies(self):
        return self.session.cookies if requests is not None else list(self.jar)

    def clone(self) -> Client:
        """Another connection pool with the same learner (for use from another thread)."""
        other = Client(self.base, self.cookies(), self.address)
        other.csrf = self.csrf
        return other

    def request(
        self, method: str, path: str, body: dict | None = None, headers: dict | None = None, timeout: float = 30.0
    ) -> tuple[int, dict, bytes]:
        """(status, headers, body); HTTP errors are answers, not exceptions."""
        headers = dict(headers or {})
        if requests is not None:
            r = self.session.request(method, self.base + path, json=body, headers=headers, timeout=timeout)
            return r.status_code, dict(r.headers), r.content
        import urllib.error
        import urllib.request

        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with self.opener.open(req, timeout=timeout) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def get_json(self, path: str) -> dict:
        status, _h, body = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body[:200]!r}")
        return json.loads(body)

    def start_session(self) -> None:
        self.csrf = self.get_json("/api/session")["csrf_token"]

    def submit(self, lesson: str, code: str) -> tuple[int, dict, dict, float]:
        t0 = time.perf_counter()
        status, headers, body = self.request(
            "POST", f"/api/lessons/{lesson}/submissions", {"code": code}, {CSRF_HEADER: self.csrf}
        )
        elapsed = time.perf_counter() - t0
        try:
            data = json.loads(body)
        except ValueError:
            data = {"raw": body[:200].decode(errors="replace")}
        return status, headers, data, elapsed

    def sse_lines(self, path: str, timeout: float = 60.0):
        """The stream's lines as text (blocking reads; the server sends a keep-alive every 15 s)."""
        if requests is not None:
            with self.session.get(
                self.base + path, stream=True, timeout=(5, timeout), headers={"Accept": "text/event-stream"}
            ) as r:
                r.raise_for_status()
                yield from r.iter_lines(decode_unicode=True)
            return
        import urllib.request

        req = urllib.request.Request(self.base + path, headers={"Accept": "text/event-stream"})
        with self.opener.open(req, timeout=timeout) as resp:
            for raw in resp:
                yield raw.decode("utf-8", "replace").rstrip("\r\n")


def _bound_adapter(address: str):
    """A requests adapter whose connections leave from `address`: a crowd spread over 127.0.0.x is many machines to
    the server's per-address limits (MAX_STREAMS_PER_IP, IP_RATE_LIMIT), as a classroom's learners are."""
    from requests.adapters import HTTPAdapter

    class Bound(HTTPAdapter):
        def init_poolmanager(self, *args, **kwargs):
            kwargs["source_address"] = (address, 0)
            super().init_poolmanager(*args, **kwargs)

    return Bound()


def crowd_address(i: int) -> str:
    """The i-th learner's own loopback address (127.0.0.10 upwards, as bench/class_load.py spreads its learners)."""
    n = 10 + i
    return f"127.0.{n // 256}.{n % 256}"


# ---------- measuring ----------


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), round(q / 100 * len(sorted_values) + 0.4999)))
    return sorted_values[rank - 1]


def summarise(samples: list[tuple[float, int]], seconds: float) -> dict:
    latencies = sorted(s[0] for s in samples)
    codes: dict[str, int] = {}
    for _lat, code in samples:
        codes[str(code)] = codes.get(str(code), 0) + 1
    return {
        "requests": len(samples),
        "per_s": round(len(samples) / seconds, 1) if seconds else None,
        "p50_ms": round(1000 * percentile(latencies, 50), 1),
        "p95_ms": round(1000 * percentile(latencies, 95), 1),
        "max_ms": round(1000 * max(latencies), 1) if latencies else None,
        "status_codes": codes,
    }


class Submission:
    def __init__(self, index: int, lesson: str, client: Client):
        self.index, self.lesson, self.client = index, lesson, client
        self.id = None
        self.post_status = None
        self.accepted_at = None  # perf_counter when the 202 arrived
        self.started_s = None  # 202 -> `started` progress event
        self.done_s = None  # 202 -> `done` event
        self.final: dict = {}
        self.stream_error = None  # why the stream did not bring the verdict (then polling did, or nothing)
        self.polled = False


POLL_S = 1.0  # the page's POLL_MS (webapp/frontend/src/page/stream.js)


def follow(sub: Submission, stop: threading.Event, deadline: float | None = None) -> None:
    """Follows the submission as the page does (stream.js): its SSE stream, timing `started` and `done`; a stream
    refused (too many open from this address or learner) or ended before `done` is noted in `stream_error`, and
    polling GET /api/submissions/<id> every POLL_S takes over until the verdict, `stop` or `deadline`
    (time.monotonic()). A verdict that arrives by polling has arrived: only one that never does is lost."""
    client = sub.client.clone()
    event = None
    try:
        for line in client.sse_lines(f"/api/submissions/{sub.id}/stream"):
            if stop.is_set():
                return
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event:
                data = json.loads(line.split(":", 1)[1])
                now = time.perf_counter() - sub.accepted_at
                if event == "progress" and data.get("stage") == "started" and sub.started_s is None:
                    sub.started_s = now
                if event == "done":
                    sub.done_s = now
                    return
            elif not line:
                event = None
        sub.stream_error = "the stream ended before the verdict"
    except Exception as exc:  # noqa: BLE001 - the page falls back to polling, and so does this
        sub.stream_error = f"{type(exc).__name__}: {exc}"
    poll(sub, client, stop, deadline)


def poll(sub: Submission, client: Client, stop: threading.Event, deadline: float | None) -> None:
    sub.polled = True
    while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
        try:
            status, _h, body = client.request("GET", f"/api/submissions/{sub.id}")
        except Exception:  # noqa: BLE001 - a failed poll is retried, as the page retries it
            status, body = 0, b""
        if status == 200:
            data = json.loads(body)
            if data["status"] == "running" and sub.started_s is None:
                sub.started_s = time.perf_counter() - sub.accepted_at
            if data["status"] in ("done", "error"):
                sub.done_s = time.perf_counter() - sub.accepted_at
                sub.final = data
                return
        time.sleep(POLL_S if status == 200 else 2 * POLL_S)


def hammer(
    base: str,
    owners: list[Client],
    lesson_ids: list[str],
    ids: list[str],
    until: float,
    results: dict[str, list],
    lock: threading.Lock,
    worker_no: int,
) -> None:
    """Round robin over the endpoints until `until`; status requests as the submission's owner."""
    own = Client(base)
    as_owner = [o.clone() for o in owners]
    endpoints = ["GET /", "GET /lessons/<id>", "GET /api/lessons", "GET /api/submissions/<id>"]
    local: dict[str, list] = {e: [] for e in endpoints}
    n = worker_no
    for endpoint in itertools.islice(itertools.cycle(endpoints), worker_no, None):
        if time.perf_counter() >= until:
            break
        n += 1
        if endpoint == "GET /":
            client, path = own, "/"
        elif endpoint == "GET /lessons/<id>":
            client, path = own, f"/lessons/{lesson_ids[n % len(lesson_ids)]}"
        elif endpoint == "GET /api/lessons":
            client, path = own, "/api/lessons"
        else:
            k = n % len(as_owner)
            client, path = as_owner[k], f"/api/submissions/{ids[k]}"
        t0 = time.perf_counter()
        try:
            status, _h, _body = client.request("GET", path)
        except Exception:  # noqa: BLE001 - connection error or timeout
            status = 0
        local[endpoint].append((time.perf_counter() - t0, status))
    with lock:
        for endpoint, samples in local.items():
            results.setdefault(endpoint, []).extend(samples)


def wait_final(client: Client, sid: str, deadline: float) -> dict:
    """Polls GET /api/submissions/<id> until done or error (or the deadline)."""
    while True:
        data = client.get_json(f"/api/submissions/{sid}")
        if data["status"] in ("done", "error") or time.monotonic() > deadline:
            return data
        time.sleep(0.5)


def references(lesson_ids: list[str]) -> dict[str, str]:
    exercises = load_all()
    return {lid: exercises[lid].reference for lid in lesson_ids}


# ---------- the two phases ----------


def phase_load(args, workdir: Path) -> dict:
    with LiveApp(workdir / "load", threads=SERVER_THREADS) as app:
        lesson_ids = args.lessons or [c["id"] for c in Client(app.url).get_json("/api/lessons")["lessons"]]
        code = references(lesson_ids)
        subs = []
        for i in range(args.submissions):
            client = Client(app.url, address=crowd_address(i))  # each learner a machine of its own
            client.start_session()
            subs.append(Submission(i, lesson_ids[i % len(lesson_ids)], client))

        stop = threading.Event()
        followers = []
        t_start = time.perf_counter()
        for sub in subs:  # all at once, as fast as one client can post them
            sub.post_status, _h, data, sub.post_s = sub.client.submit(sub.lesson, code[sub.lesson])
            sub.accepted_at = time.perf_counter()
            if sub.post_status != 202:
                raise RuntimeError(f"submission {sub.index} refused: {sub.post_status} {data}")
            sub.id = data["id"]
            thread = threading.Thread(
                target=follow, args=(sub, stop, time.monotonic() + args.grade_timeout), daemon=True
            )
            thread.start()
            followers.append(thread)

        until = t_start + args.duration
        results: dict[str, list] = {}
        lock = threading.Lock()
        hammers = [
            threading.Thread(
                target=hammer,
                args=(app.url, [s.client for s in subs], lesson_ids, [s.id for s in subs], until, results, lock, w),
            )
            for w in range(args.concurrency)
        ]
        for thread in hammers:
            thread.start()
        for thread in hammers:
            thread.join()
        hammered_s = time.perf_counter() - t_start
        all_done_in_window = all(s.done_s is not None for s in subs)

        deadline = time.monotonic() + args.grade_timeout
        for thread in followers:
            thread.join(timeout=max(0.1, deadline - time.monotonic()))
        stop.set()
        for sub in subs:
            sub.final = wait_final(sub.client, sub.id, deadline)

    endpoints = {name: summarise(samples, hammered_s) for name, samples in results.items()}
    submissions = [
        {
            "lesson": s.lesson,
            "id": s.id,
            "post_ms": round(1000 * s.post_s, 1),
            "accepted_to_started_s": _r(s.started_s),
            "accepted_to_done_s": _r(s.done_s),
            "server_created_to_finished_s": _r(
                s.final["finished_at"] - s.final["created_at"] if s.final.get("finished_at") else None
            ),
            "grading_s": _r(
                s.final["finished_at"] - s.final["started_at"]
                if s.final.get("finished_at") and s.final.get("started_at")
                else None
            ),
            "status": s.final.get("status"),
            "result_status": s.final.get("result_status"),
            "attempt": s.final.get("attempt"),
            "stream_error": s.stream_error,
            "verdict_by_polling": s.polled and s.done_s is not None,
        }
        for s in subs
    ]
    return {
        "duration_s": round(hammered_s, 1),
        "concurrency": args.concurrency,
        "sandbox": app.sandbox,
        "sandbox_note": app.sandbox_note,
        "lessons": lesson_ids,
        "endpoints": endpoints,
        "submissions": submissions,
        "all_done_within_duration": all_done_in_window,
    }


def phase_queue_full(args, workdir: Path) -> dict:
    with LiveApp(workdir / "full", settings={"QUEUE_MAX": args.queue_max}, threads=SERVER_THREADS) as app:
        lesson = (args.lessons or ["autocast"])[0]
        code = references([lesson])[lesson]
        total = args.queue_max + args.overflow
        clients = []
        for _ in range(total):
            client = Client(app.url)
            client.start_session()
            clients.append(client)
        answers = []
        t0 = time.perf_counter()
        for client in clients:  # back to back: faster than the worker can drain the queue
            status, headers, data, elapsed = client.submit(lesson, code)
            answers.append(
                {
                    "status": status,
                    "retry_after": headers.get("Retry-After"),
                    "id": data.get("id"),
                    "error": data.get("error"),
                    "ms": round(1000 * elapsed, 1),
                    "client": client,
                }
            )
        posting_s = time.perf_counter() - t0

        deadline = time.monotonic() + args.grade_timeout
        t_wait = time.perf_counter()
        finals = []
        for answer in answers:
            if answer["status"] == 202:
                final = wait_final(answer["client"], answer["id"], deadline)
                finals.append(
                    {
                        "id": answer["id"],
                        "status": final["status"],
                        "result_status": final["result_status"],
                        "attempt": final["attempt"],
                    }
                )
        drain_s = time.perf_counter() - t_wait
        # After the drain, the queue accepts again.
        again = Client(app.url)
        again.start_session()
        after_status, _h, after_data, _e = again.submit(lesson, code)
        if after_status == 202:
            wait_final(again, after_data["id"], time.monotonic() + args.grade_timeout)

    codes: dict[str, int] = {}
    for a in answers:
        codes[str(a["status"])] = codes.get(str(a["status"]), 0) + 1
    refused = [a for a in answers if a["status"] == 429]
    return {
        "queue_max": args.queue_max,
        "posted": total,
        "posting_s": round(posting_s, 2),
        "status_codes": codes,
        "retry_after": sorted({a["retry_after"] for a in refused}, key=str),
        "refusal_messages": sorted({a["error"] for a in refused if a["error"]}),
        "every_429_has_retry_after": all(a["retry_after"] for a in refused),
        "accepted": len(finals),
        "accepted_outcomes": finals,
        "every_accepted_ended": all(f["status"] in ("done", "error") for f in finals),
        "drain_s": round(drain_s, 1),
        "after_drain_status": after_status,
        "answers": [{k: v for k, v in a.items() if k != "client"} for a in answers],
    }


def _r(value, digits: int = 2):
    return None if value is None else round(value, digits)


# ---------- the report ----------


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import waitress  # noqa: F401

        server = "waitress"
    except ImportError:
        server = "werkzeug (threaded; waitress not installed)"
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": "cpu",
        "http_client": "requests" if requests else "urllib",
        "wsgi_server": server,
        "workers": 1,
    }


def markdown(report: dict) -> str:
    from classroom_phase import markdown as classroom_markdown

    rooms = [line for room in report.get("classroom", []) for line in ["", *classroom_markdown(room)]]
    if "load" not in report:
        m = report["machine"]
        return "\n".join(
            [
                f"Machine: {m['cores']} cores ({m['cpu'] or 'unknown CPU'}), Python {m['python']}, "
                f"server {m['wsgi_server']}, client {m['http_client']}.",
                *rooms,
            ]
        )
    return _markdown_grading(report) + "\n" + "\n".join(rooms)


def _markdown_grading(report: dict) -> str:
    m, load, full = report["machine"], report["load"], report["queue_full"]
    out = [
        f"Machine: {m['cores']} cores ({m['cpu'] or 'unknown CPU'}), CPU only (DEVICE=cpu), "
        f"Python {m['python']}, server {m['wsgi_server']}, 1 grading worker, sandbox {load['sandbox']}, "
        f"client {m['http_client']}.",
        "",
        f"### Latency under load ({load['duration_s']} s, {load['concurrency']} client threads, "
        f"{len(load['submissions'])} submissions being graded)",
        "",
        "| endpoint | requests | req/s | p50 ms | p95 ms | max ms | status codes |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, s in load["endpoints"].items():
        codes = ", ".join(f"{k}×{v}" for k, v in sorted(s["status_codes"].items()))
        out.append(
            f"| `{name}` | {s['requests']} | {s['per_s']} | {s['p50_ms']} | {s['p95_ms']} | {s['max_ms']} | {codes} |"
        )
    out += [
        "",
        "### Submissions (each followed over SSE from its own session)",
        "",
        "| # | lesson | POST ms | 202 → started s | 202 → done s | grading s (server) | outcome |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for i, s in enumerate(load["submissions"]):
        outcome = f"{s['status']}/{s['result_status']}" + (f" (attempt {s['attempt']})" if s["attempt"] != 1 else "")
        out.append(
            f"| {i + 1} | {s['lesson']} | {s['post_ms']} | {s['accepted_to_started_s']} | "
            f"{s['accepted_to_done_s']} | {s['grading_s']} | {outcome} |"
        )
    outcomes = ", ".join(f"{f['status']}/{f['result_status']}" for f in full["accepted_outcomes"])
    out += [
        "",
        f"### Queue full (QUEUE_MAX={full['queue_max']}, {full['posted']} posted back to back from distinct sessions)",
        "",
        "| posted | status codes | Retry-After on 429 | every 429 has Retry-After | accepted | "
        "accepted ended done/error | drain s | POST after drain |",
        "|---:|---|---|---|---:|---|---:|---:|",
        f"| {full['posted']} | {', '.join(f'{k}×{v}' for k, v in sorted(full['status_codes'].items()))} | "
        f"{', '.join(map(str, full['retry_after'])) or '-'} | {full['every_429_has_retry_after']} | "
        f"{full['accepted']} | {full['every_accepted_ended']} ({outcomes}) | {full['drain_s']} | "
        f"{full['after_drain_status']} |",
    ]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (phase 1)")
    parser.add_argument("--submissions", type=int, default=6, help="submissions graded during the load")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads requesting pages and API")
    parser.add_argument("--queue-max", type=int, default=5, help="QUEUE_MAX for the queue-full phase")
    parser.add_argument("--overflow", type=int, default=4, help="submissions posted beyond QUEUE_MAX")
    parser.add_argument("--lessons", nargs="*", help="lesson ids to submit (default: all, in turn)")
    parser.add_argument(
        "--grade-timeout", type=float, default=300.0, help="longest wait for submissions to finish after each phase"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "bench" / "webapp_load.json")
    parser.add_argument(
        "--phases", default="load,queue_full,classroom", help="comma-separated: load, queue_full, classroom"
    )
    parser.add_argument(
        "--databases",
        default="sqlite,postgresql",
        help="databases for the classroom phase: sqlite, postgresql (a throwaway local server)",
    )
    parser.add_argument("--learners", type=int, default=200, help="learners in the classroom phase's course")
    parser.add_argument("--per-learner", type=int, default=20, help="graded submissions per learner")
    parser.add_argument("--classroom-duration", type=float, default=30.0, help="seconds of classroom load per database")
    parser.add_argument(
        "--classroom-rate", type=float, default=20.0, help="requests per second in the classroom phase (an open loop)"
    )
    parser.add_argument(
        "--classroom-alone",
        type=int,
        default=20,
        help="requests per page made one at a time before the classroom phase's open loop",
    )
    parser.add_argument("--max-p95-ms", type=float, default=50.0, help="classroom p95 above this is a PROBLEM")
    args = parser.parse_args(argv)
    phases = set(args.phases.split(","))
    if args.submissions < 1 or args.concurrency < 1 or args.queue_max < 1:
        parser.error("--submissions, --concurrency and --queue-max must be at least 1")
    if args.submissions + args.concurrency > SERVER_THREADS - 2:
        print(
            f"warning: {args.submissions} open streams + {args.concurrency} client threads come near the "
            f"server's {SERVER_THREADS} request threads (each open SSE stream holds one); requests will "
            "queue behind the streams",
            file=sys.stderr,
        )

    with tempfile.TemporaryDirectory(prefix="amp-dojo-load-") as tmp:
        report = {
            "machine": machine(),
            "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        }
        if "load" in phases:
            print(f"phase 1: {args.duration:.0f} s of load, {args.submissions} submissions ...", file=sys.stderr)
            report["load"] = phase_load(args, Path(tmp))
        if "queue_full" in phases:
            print(f"phase 2: queue full (QUEUE_MAX={args.queue_max}) ...", file=sys.stderr)
            report["queue_full"] = phase_queue_full(args, Path(tmp))
        if "classroom" in phases:
            import classroom_phase

            report["classroom"] = []
            for kind in args.databases.split(","):
                print(
                    f"phase 3: classroom on {kind}, {args.learners} learners x {args.per_learner} submissions ...",
                    file=sys.stderr,
                )
                report["classroom"].append(classroom_phase.run(args, Path(tmp), kind, LiveApp, Client, summarise))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report))
    print(f"\n(JSON: {args.out})")
    problems = []
    load, full = report.get("load"), report.get("queue_full")
    if load and any(s["status"] not in ("done", "error") for s in load["submissions"]):
        problems.append("a phase-1 submission did not finish")
    if full and ("429" not in full["status_codes"] or not full["every_429_has_retry_after"]):
        problems.append("the full queue did not answer 429 with Retry-After")
    if full and not full["every_accepted_ended"]:
        problems.append("an accepted submission did not end done/error")
    for room in report.get("classroom", []):
        for name, s in room["endpoints"].items():
            if s["p95_ms"] > args.max_p95_ms or set(s["status_codes"]) != {"200"}:
                problems.append(f"{room['database']}: {name} p95 {s['p95_ms']} ms, status {s['status_codes']}")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

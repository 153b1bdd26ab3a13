"""The classroom phase of bench/webapp_load.py: signed-in pages and the
instructor's dashboard for a course of `--learners` learners with
`--per-learner` graded submissions each, on SQLite and/or PostgreSQL.

The course is written straight into the app's database (accounts, enrollments,
submissions with result documents of the size the grader writes, and their
findings, as the collector would index them): grading 4,000 submissions for
real would take hours here, and what is measured is the pages that read them.
Each submission's code differs, so no page can be served from a cache of
highlighted code. Then requests leave at `--classroom-rate` per second (an open
loop: a slow answer does not slow the next request down), from sessions signed
in through the real /signin form (the instructor, or one of four learners),
round robin over the pages, for `--classroom-duration` seconds."""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from pathlib import Path

CLASS_FINDINGS = [
    ("call_order", "clip_without_unscale"),
    ("call_order", "update_missing"),
    ("call_order", "backward_inside_autocast"),
    ("parity", "loss_off"),
    ("call_order", "unscale_twice"),
    ("call_order", "step_without_scaler"),
    ("coverage", "matmul_fp32"),
]
PASSWORD = "bench-password-123"


def result_document(rng: random.Random, passed: bool, lesson: str) -> tuple[dict, list]:
    """A result shaped like the grader's (checks, measured values, plots of 30 steps); its findings."""
    found = [] if passed else rng.sample(CLASS_FINDINGS, rng.randint(1, 2))
    checks = []
    for check in ("call_order", "parity", "coverage", "overflow", "speedup"):
        mine = [
            {
                "id": f,
                "message": f"{f.replace('_', ' ')} at line {rng.randint(5, 30)}",
                "fix": "see the lesson",
                "line": rng.randint(5, 30),
                "severity": "error",
            }
            for c, f in found
            if c == check
        ]
        checks.append(
            {
                "id": check,
                "status": "fail" if mine else "pass",
                "message": "",
                "weight": 1.0,
                "measured": {"max_loss_rel_diff": rng.random() / 50, "steps": 30},
                "threshold": None,
                "findings": mine,
            }
        )
    losses = [2.3 * 0.97**i for i in range(30)]
    doc = {
        "schema_version": 1,
        "status": "pass" if passed else "fail",
        "score": 1.0 if passed else 0.6,
        "exercise": lesson,
        "device": "cpu",
        "amp_dtype": "bfloat16",
        "checks": checks,
        "error": None,
        "plots": {"loss": {"baseline": losses, "submission": [v * 1.001 for v in losses]}},
        "output": "",
        "sandbox": "bwrap",
        "duration_s": 9.5,
        "notes": [],
    }
    return doc, [(c, f, rng.randint(5, 30)) for c, f in found]


def populate(database: str, lessons: list[str], learners: int, per_learner: int, seed: int = 14) -> dict:
    """The course, written with the app's own connection layer: its id and who is in it."""
    import sqlalchemy as sa
    from werkzeug.security import generate_password_hash

    from webapp.content import highlight_code
    from webapp.db import connect, transaction

    rng = random.Random(seed)
    password_hash = generate_password_hash(PASSWORD)  # one hash for all: sign-in cost is not what is measured
    now = time.time()
    db = connect(database)
    users, subs, found = [], [], []
    try:
        with transaction(db):
            conn = db.connection
            names = ["teacher"] + [f"learner{n:03d}" for n in range(learners)]
            for n, name in enumerate(names):
                users.append(
                    {
                        "u": name,
                        "k": name,
                        "h": password_hash,
                        "r": "instructor" if n == 0 else "learner",
                        "l": secrets.token_urlsafe(16),
                        "t": secrets.token_urlsafe(32),
                        "c": now,
                    }
                )
            conn.execute(
                sa.text(
                    "INSERT INTO users (username, username_key, password_hash, role, learner, "
                    "session_token, created_at) VALUES (:u, :k, :h, :r, :l, :t, :c)"
                ),
                users,
            )
            ids = {r[0]: r[1] for r in conn.execute(sa.text("SELECT username, id FROM users"))}
            conn.execute(
                sa.text(
                    "INSERT INTO courses (name, join_code, created_by, created_at) "
                    "VALUES ('Bench course', 'BENCH123', :i, :c)"
                ),
                {"i": ids["teacher"], "c": now},
            )
            course = conn.execute(sa.text("SELECT id FROM courses WHERE join_code = 'BENCH123'")).scalar()
            conn.execute(
                sa.text("INSERT INTO course_instructors (course_id, user_id) VALUES (:c, :u)"),
                {"c": course, "u": ids["teacher"]},
            )
            conn.execute(
                sa.text("INSERT INTO course_lessons (course_id, lesson, position) VALUES (:c, :l, :p)"),
                [{"c": course, "l": lesson, "p": p} for p, lesson in enumerate(lessons, 1)],
            )
            conn.execute(
                sa.text("INSERT INTO enrollments (course_id, user_id, joined_at) VALUES (:c, :u, :t)"),
                [{"c": course, "u": ids[u["u"]], "t": now} for u in users[1:]],
            )
            for u in users[1:]:
                for k in range(per_learner):
                    lesson = lessons[k % len(lessons)]
                    passed = rng.random() < 0.35
                    doc, mistakes = result_document(rng, passed, lesson)
                    sid = secrets.token_hex(8)
                    created = now - 86400 + rng.random() * 80000
                    code = (
                        f"import torch\n\n\ndef train_step(model, optimizer, inputs, targets, device_type, amp_dtype):\n"
                        f"    # attempt {k} of {u['u']}\n    optimizer.zero_grad()\n"
                        f"    with torch.autocast(device_type=device_type, dtype=amp_dtype):\n"
                        f"        loss = model(inputs).float().pow(2).mean() * {rng.random():.6f}\n"
                        f"    loss.backward()\n    optimizer.step()\n    return loss\n"
                    )
                    subs.append(
                        {
                            "i": sid,
                            "l": u["l"],
                            "s": lesson,
                            "c": code,
                            "t": created,
                            "r": json.dumps(doc),
                            "rs": doc["status"],
                            "sc": doc["score"],
                        }
                    )
                    found += [
                        {
                            "s": sid,
                            "le": u["l"],
                            "ls": lesson,
                            "t": created,
                            "c": c,
                            "f": f,
                            "n": line,
                            "m": f"{f} at line {line}",
                            "r": 0,
                        }
                        for c, f, line in mistakes
                    ]  # distinct ids
            conn.execute(
                sa.text(
                    "INSERT INTO submissions (id, learner, client_ip, lesson, code, lang, status, attempt, "
                    "created_at, queued_at, enqueued_at, started_at, finished_at, result, result_status, "
                    "score, graded_by) VALUES (:i, :l, '127.0.0.1', :s, :c, 'en', 'done', 1, :t, :t, :t, "
                    ":t, :t + 10, :r, :rs, :sc, 'bench')"
                ),
                subs,
            )
            conn.execute(
                sa.text(
                    "INSERT INTO findings (submission_id, learner, lesson, created_at, check_id, "
                    "finding_id, line, message, repeat) VALUES (:s, :le, :ls, :t, :c, :f, :n, :m, :r)"
                ),
                found,
            )
            conn.execute(
                sa.text(
                    "INSERT INTO learner_lessons (learner, lesson, attempts, first_at, best_score, "
                    "passed_at, attempts_to_pass) VALUES (:learner, :lesson, :attempts, :first_at, "
                    ":best_score, :passed_at, :attempts_to_pass)"
                ),
                records(subs),
            )
            conn.execute(
                sa.text("INSERT INTO code_views (submission_id, html) VALUES (:s, :h)"),
                [{"s": sub["i"], "h": str(highlight_code(sub["c"]))} for sub in subs],
            )
        if db.dialect == "postgresql":
            db.execute("ANALYZE")
    finally:
        db.close()
    learner_ids = [ids[u["u"]] for u in users[1:]]
    return {"course": course, "learner_ids": learner_ids, "submissions": len(subs), "findings": len(found)}


def records(subs: list[dict]) -> list[dict]:
    """What webapp/learner_lessons.py would have kept for these submissions, stored and graded in time order."""
    table: dict = {}
    for sub in sorted(subs, key=lambda s: s["t"]):
        r = table.setdefault(
            (sub["l"], sub["s"]),
            {
                "learner": sub["l"],
                "lesson": sub["s"],
                "attempts": 0,
                "first_at": sub["t"],
                "best_score": None,
                "passed_at": None,
                "attempts_to_pass": None,
            },
        )
        r["attempts"] += 1
        r["best_score"] = sub["sc"] if r["best_score"] is None else max(r["best_score"], sub["sc"])
        if sub["rs"] == "pass" and r["passed_at"] is None:
            r["passed_at"], r["attempts_to_pass"] = sub["t"], r["attempts"]
    return list(table.values())


def signed_in(client_cls, base: str, username: str):
    client = client_cls(base)
    token = client.get_json("/api/session")["csrf_token"]
    response = client.session.post(
        base + "/signin",
        data={"csrf_token": token, "username": username, "password": PASSWORD},
        allow_redirects=False,
        timeout=30,
    )
    if response.status_code != 303:
        raise RuntimeError(f"sign-in of {username} failed: {response.status_code} {response.text[:200]}")
    return client


def endpoints(course: dict, lessons: list[str], n: int) -> list[tuple[str, str, str]]:
    """(name, who, path) for the n-th request round."""
    cid = course["course"]
    learner = course["learner_ids"][n % len(course["learner_ids"])]
    return [
        ("GET / (learner)", "learner", "/"),
        ("GET /courses (learner)", "learner", "/courses"),
        ("GET /courses/<id> (learner)", "learner", f"/courses/{cid}"),
        ("GET /lessons/<id> (learner)", "learner", f"/lessons/{lessons[n % len(lessons)]}"),
        ("GET /teach/courses/<id> (dashboard)", "teacher", f"/teach/courses/{cid}"),
        ("GET /teach/courses/<id>/learners/<id>", "teacher", f"/teach/courses/{cid}/learners/{learner}"),
        ("GET /teach/courses/<id>/gradebook.csv", "teacher", f"/teach/courses/{cid}/gradebook.csv"),
    ]


def run(args, workdir: Path, database_kind: str, live_app_cls, client_cls, summarise) -> dict:
    from postgres_server import PostgresServer

    server = PostgresServer().start() if database_kind == "postgresql" else None
    try:
        database = server.create_database("bench") if server else str(workdir / f"classroom-{database_kind}.sqlite3")
        settings = {"DATABASE": database, "COLLECT_INTERVAL": 0}
        with live_app_cls(workdir / f"classroom-{database_kind}", settings=settings, workers=0, threads=16) as app:
            lessons = args.lessons or [
                "autocast",
                "grad_scaler",
                "grad_accumulation",
                "reduce_memory",
                "transformer_block",
            ]
            t0 = time.perf_counter()
            course = populate(database, lessons, args.learners, args.per_learner)
            populate_s = time.perf_counter() - t0
            teacher = signed_in(client_cls, app.url, "teacher")
            learners = [signed_in(client_cls, app.url, f"learner{n:03d}") for n in range(min(4, args.learners))]
            # Open loop: requests leave at a fixed rate, whether or not earlier ones have been answered, as
            # a class's page views do; each is timed from when it was sent to the end of its body.
            for path in ("/", f"/teach/courses/{course['course']}"):  # first requests: imports, lesson loading
                teacher.request("GET", path)
            alone: dict[str, list] = {}  # one request at a time: each page's own time, without queueing
            for n in range(7 * args.classroom_alone):
                name, who, path = endpoints(course, lessons, n)[n % 7]
                client = teacher if who == "teacher" else learners[0]
                t = time.perf_counter()
                status, _h, _b = client.request("GET", path)
                alone.setdefault(name, []).append((time.perf_counter() - t, status))
            results: dict[str, list] = {}
            lock = threading.Lock()
            local = threading.local()

            def one(n: int):
                if not hasattr(local, "teacher"):
                    local.teacher = teacher.clone()
                    local.learner = learners[threading.get_ident() % len(learners)].clone()
                rounds = endpoints(course, lessons, n)
                name, who, path = rounds[n % len(rounds)]
                client = local.teacher if who == "teacher" else local.learner
                t = time.perf_counter()
                try:
                    status, _h, _b = client.request("GET", path)
                except Exception:  # noqa: BLE001 - any failure of a request counts as status 0
                    status = 0
                with lock:
                    results.setdefault(name, []).append((time.perf_counter() - t, status))

            from concurrent.futures import ThreadPoolExecutor

            total = int(args.classroom_rate * args.classroom_duration)
            start = time.perf_counter()
            with ThreadPoolExecutor(max_workers=16) as pool:
                for n in range(total):
                    delay = start + n / args.classroom_rate - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                    pool.submit(one, n)
            seconds = time.perf_counter() - start
        return {
            "database": database_kind,
            "learners": args.learners,
            "per_learner": args.per_learner,
            "lessons": lessons,
            "submissions": course["submissions"],
            "findings": course["findings"],
            "populate_s": round(populate_s, 1),
            "duration_s": round(seconds, 1),
            "rate": args.classroom_rate,
            "load_average": _load_average(),
            "alone_each": args.classroom_alone,
            "endpoints": {name: summarise(samples, seconds) for name, samples in sorted(results.items())},
            "alone": {name: summarise(samples, 1.0) for name, samples in sorted(alone.items())},
        }
    finally:
        if server is not None:
            server.stop()


def _load_average() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def markdown(report: dict) -> list[str]:
    out = [
        f"### Signed-in pages and the dashboard ({report['database']}: a course of {report['learners']} learners "
        f"x {report['per_learner']} submissions = {report['submissions']} submissions, {report['findings']} "
        f"findings, {len(report['lessons'])} lessons; {report['rate']} requests/s for {report['duration_s']} s, "
        f"round robin over the pages; machine load average at the end {report['load_average']})",
        "",
        "| endpoint | requests | p50 ms | p95 ms | max ms | status codes | alone: p50 ms | alone: p95 ms |",
        "|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for name, s in report["endpoints"].items():
        codes = ", ".join(f"{k}×{v}" for k, v in sorted(s["status_codes"].items()))
        a = report["alone"].get(name, {})
        out.append(
            f"| `{name}` | {s['requests']} | {s['p50_ms']} | {s['p95_ms']} | {s['max_ms']} | {codes} | "
            f"{a.get('p50_ms')} | {a.get('p95_ms')} |"
        )
    out += ["", f"(alone: the same pages requested one at a time before the open loop, {report['alone_each']} each)"]
    return out

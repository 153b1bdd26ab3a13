import re
from pathlib import Path

import pytest

from grader import runner
from grader.lesson.loader import load_all
from grader.sandboxes.limits import Limits
from grader.sandboxes.zygote import ForkLauncher

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Short limits so the hang and memory cases finish quickly; still real processes. Measured on this machine
# kind (2 cores): the slowest reference step is under 0.5 s with bfloat16 emulated (ONEDNN_MAX_CPU_ISA=AVX2),
# and errors/eats_memory fills 1.5 GiB in about 2 s alone, 5-6 s with the suite's two workers beside it.
TEST_LIMITS = Limits(memory_bytes=1536 * 1024**2, step_timeout_s=10, init_timeout_s=90)


@pytest.fixture(scope="session", autouse=True)
def private_caches(tmp_path_factory):
    """`grader check` and the notebook keep trusted runs in the user's cache, and the grader's device locks
    live in /tmp: the suite keeps them to itself, shared by its own xdist workers. The gradings in the test
    processes keep their trusted runs there too, as `grader check` does: each lesson's FP32 baseline and
    reference then run once per sandbox for the whole suite, not once per xdist worker."""
    import os

    cache = tmp_path_factory.getbasetemp().parent / "amp-dojo-cache"
    os.environ["AMP_DOJO_CACHE"] = str(cache)
    # and the lessons' trusted compile caches (grader/sandboxes/compile_cache.py): a lesson's reference is compiled
    # once for the whole suite, and every compiled grading after it loads its kernels
    os.environ["AMP_DOJO_COMPILE_CACHE"] = str(tmp_path_factory.getbasetemp().parent / "amp-dojo-compile-cache")
    os.environ.setdefault("AMP_DOJO_LOCK_DIR", str(tmp_path_factory.getbasetemp().parent / "amp-dojo-locks"))
    runner.use_trusted_store(runner.DirectoryStore(runner.user_cache_dir()))
    yield
    runner.use_trusted_store(None)


@pytest.fixture(scope="session")
def exercises():
    return load_all()


@pytest.fixture(scope="session")
def launcher():
    """The suite's local gradings fork their workers from a zygote that imported PyTorch once (about 2 s of CPU
    saved per worker, most of a small grading's cost); tests of LocalLauncher itself start it as it is."""
    forked = ForkLauncher(TEST_LIMITS)
    yield forked
    forked.close()


@pytest.fixture(scope="session")
def grade(exercises, launcher):
    """Grades source for an exercise on CPU, memoised per (exercise, source)."""
    cache = {}

    def _grade(exercise_id, source):
        key = (exercise_id, source)
        if key not in cache:
            cache[key] = runner.run(exercises[exercise_id], source, device="cpu", launcher=launcher)
        return cache[key]

    return _grade


def expectations(path: Path) -> dict:
    """`# expect-...:` header lines of a golden submission."""
    out = {
        "findings": [],
        "absent": [],
        "checks": {},
        "messages": [],
        "unsaid": [],
        "status": None,
        "error": None,
        "finding_lines": {},
        "notes": [],
        "absent_notes": [],
    }
    for line in path.read_text().splitlines():
        m = re.match(r"# expect-([a-z-]+): (.*)", line)
        if not m:
            continue
        key, value = m.groups()
        if key == "status":
            out["status"] = value
        elif key == "finding":
            finding, *rest = value.split()
            out["findings"].append(finding)
            if rest and rest[0].startswith("line="):
                out["finding_lines"][finding] = int(rest[0].split("=")[1])
        elif key == "note":  # a note beside the verdict, by its message key (or id), at a line
            note, *rest = value.split()
            out["notes"].append((note, int(rest[0].split("=")[1]) if rest else None))
        elif key == "no-note":
            out["absent_notes"].append(value)
        elif key == "no-finding":
            out["absent"].append(value)
        elif key == "check":
            check_id, status = value.split("=")
            out["checks"][check_id] = status
        elif key == "message":
            out["messages"].append(value)
        elif key == "no-message":
            out["unsaid"].append(value)
        elif key == "error":
            kind, *rest = value.split()
            out["error"] = {"kind": kind, **dict(r.split("=") for r in rest)}
    return out


@pytest.fixture(scope="session")
def postgres():
    """One throwaway PostgreSQL server per test process (tests/postgres_server.py). Skipped where
    PostgreSQL is not installed, unless AMP_DOJO_REQUIRE_POSTGRES is set (CI), which makes it a failure."""
    from postgres_server import REQUIRE, NoPostgres, PostgresServer

    try:
        server = PostgresServer().start()
    except NoPostgres as exc:
        if REQUIRE:
            pytest.fail(f"AMP_DOJO_REQUIRE_POSTGRES is set but {exc}", pytrace=False)
        pytest.skip(f"{exc} (set AMP_DOJO_REQUIRE_POSTGRES=1 to make this a failure)")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_database(postgres):
    """A fresh, empty database on the test PostgreSQL server: its URL."""
    from webapp.db import dispose

    url = postgres.create_database()
    try:
        yield url
    finally:
        dispose(url)
        postgres.drop_database(url)

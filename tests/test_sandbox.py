"""The attack suite: hostile submissions (tests/attacks/*.py) against every sandbox
backend. Each must end in `fail` or `error`, leak nothing, leave the host as it
was and leave the grader running. Attacks marked `applies: isolated` only make
sense where the backend promises isolation (bwrap, docker); the `local`
backend is documented as unisolated and only gets the verdict-level attacks.

The isolating backends are attacked through a pool of warm sandboxes
(grader/sandboxes/pool.py), as the web app grades: a warm sandbox must contain an attack
exactly as a cold one does. The verdict comparisons use cold starts.

In CI, AMP_DOJO_REQUIRE_SANDBOXES=docker,bwrap turns a missing backend into a
failure instead of a skip."""

import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from conftest import ROOT, SUBMISSIONS, TEST_LIMITS

from grader import runner
from grader.errors import EnvironmentProblem
from grader.lesson.loader import load_all, parse_exercise
from grader.sandboxes.kinds import make_launcher, unavailable_reason

ATTACKS = Path(__file__).resolve().parent / "attacks"
BACKENDS = ["local", "bwrap", "docker"]
REQUIRED = {n for n in os.environ.get("AMP_DOJO_REQUIRE_SANDBOXES", "").split(",") if n}
ATTACK_LIMITS = replace(TEST_LIMITS, tmp_bytes=64 * 1024**2, processes=128, memory_bytes=3 * 1024**3)


def header(path: Path) -> dict:
    out = {"exercise": "autocast"}
    for line in path.read_text().splitlines():
        m = re.match(r"# (attack|applies|expect|exercise): (.*)", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


@pytest.fixture(scope="session")
def pooled(launchers):
    """The backend's launcher behind a pool of warm sandboxes (local stays a cold start)."""
    from grader.sandboxes.pool import WarmPool

    pools = {}

    def get(name):
        if name == "local":
            return launchers(name)
        if name not in pools:
            pools[name] = WarmPool(launchers(name), size=2, devices=("cpu",))
        return pools[name]

    yield get
    for pool in pools.values():
        pool.close()


@pytest.fixture(scope="session")
def launchers():
    made = {}

    def get(name):
        if name not in made:
            why = unavailable_reason(name)
            if why is not None:
                made[name] = why
            else:
                made[name] = make_launcher(name, ATTACK_LIMITS, allow_local=True)
        if isinstance(made[name], str):
            if name in REQUIRED:
                pytest.fail(f"the {name} sandbox is required here but cannot run: {made[name]}")
            pytest.skip(f"{name} sandbox not available: {made[name]}")
        return made[name]

    return get


@pytest.fixture(scope="session")
def all_exercises():
    exercises = load_all()
    timed, problems = parse_exercise(ROOT / "tests" / "fixtures" / "exercises" / "timed.yaml")
    assert not problems
    return {**exercises, "timed": timed}


class LoopbackServer(threading.Thread):
    """Counts every connection made to it, from anywhere."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.create_server(("0.0.0.0", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.start()

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


def host_ip() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.2"


def marked_processes(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry.name}/cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def canaries(marker: str) -> list[Path]:
    return [
        ROOT / f"canary-{marker}",
        ROOT / "grader" / f"canary-{marker}.py",
        Path(torch.__file__).parent / f"canary-{marker}.py",
        Path(f"/usr/canary-{marker}"),
        Path(f"/canary-{marker}"),
    ]


def attack_cases():
    for path in sorted(ATTACKS.glob("*.py")):
        meta = header(path)
        for backend in BACKENDS:
            if meta["applies"] == "isolated" and backend == "local":
                continue
            yield pytest.param(path, backend, id=f"{backend}-{path.stem}")


@pytest.mark.slow
@pytest.mark.parametrize("path,backend", list(attack_cases()))
def test_attack_is_contained(path, backend, pooled, all_exercises, monkeypatch):
    meta = header(path)
    launcher = pooled(backend)
    secret = secrets.token_hex(16)
    monkeypatch.setenv("AMP_DOJO_SECRET_KEY", secret)  # planted in the grader's environment
    marker = f"amp-dojo-attack-{secrets.token_hex(6)}"
    server = LoopbackServer()
    sentinel = subprocess.Popen(["sleep", "300"])
    source = (
        path.read_text()
        .replace("__REPO__", str(ROOT))
        .replace("__MARKER__", marker)
        .replace("__PORT__", str(server.port))
        .replace("__HOST_IP__", host_ip())
        .replace("__SENTINEL_PID__", str(sentinel.pid))
    )
    try:
        result = runner.run(all_exercises[meta["exercise"]], source, device="cpu", launcher=launcher)
        document = str(result.to_dict())
        assert result.status in meta["expect"].split("|"), (result.status, result.error, document[:3000])
        assert secret not in document, "the grader's environment leaked"
        assert "LEAK" not in document.replace("# LEAK", ""), document[:3000]
        assert server.connections == 0, "the code reached a server on the host"
        assert sentinel.poll() is None, "the code killed a process of the host"
        assert [p for p in canaries(marker) if p.exists()] == [], "the code wrote outside its sandbox"
        assert len(result.output) < launcher.limits.output_bytes + 200
        deadline = time.monotonic() + 10
        while marked_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marked_processes(marker) == [], "processes started by the code outlived the grading"
    finally:
        server.sock.close()
        sentinel.kill()
        for pid in marked_processes(marker):
            os.kill(pid, signal.SIGKILL)
        for p in canaries(marker):
            p.unlink(missing_ok=True)


def _explains(result, *words) -> bool:
    text = (result.error.message if result.error else "") + " ".join(c.message for c in result.checks)
    return all(w in text for w in words)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_sandbox_limits_are_named_in_the_verdict(backend, launchers, all_exercises):
    """A learner is told which limit they hit, not just 'error'."""
    launcher = launchers(backend)
    ex = all_exercises["autocast"]
    fork = runner.run(
        ex, (ATTACKS / "fork_bomb.py").read_text().replace("__MARKER__", "x"), device="cpu", launcher=launcher
    )
    assert fork.error.kind == "exception" and _explains(fork, "fork refused")
    disk = runner.run(ex, (ATTACKS / "fill_disk.py").read_text(), device="cpu", launcher=launcher)
    assert _explains(disk, "the disk filled after")
    # Near a memory limit the kernel reclaims (torch's mapped libraries too) before it refuses or kills, which
    # under the suite's load took over 10 s in some runs: the memory cases get a step limit with room for that.
    roomy = make_launcher(backend, replace(launcher.limits, step_timeout_s=40), allow_local=True)
    hog = runner.run(ex, (ATTACKS / "memory_hog.py").read_text(), device="cpu", launcher=roomy)
    assert hog.error.kind == "oom" and _explains(hog, "memory")
    spread = runner.run(ex, (ATTACKS / "memory_hog_processes.py").read_text(), device="cpu", launcher=roomy)
    killed = re.search(r"(\d) of 4 memory-hungry children were killed", spread.error.message)
    assert killed and int(killed.group(1)) >= 1, spread.error.message  # 4 GiB in all, over the 3 GiB cap
    loop = runner.run(ex, (ATTACKS / "infinite_loop.py").read_text(), device="cpu", launcher=launcher)
    assert loop.error.kind == "timeout" and loop.error.line in (6, 7)
    assert (
        "most recent call first" not in loop.output and "grader/worker/serve.py" not in loop.output
    )  # the dump is ours


VERDICT_CASES = [
    (ex, role)
    for ex in ("autocast", "grad_scaler", "grad_accumulation", "reduce_memory")
    for role in ("reference", "starter")
] + [
    ("autocast", "autocast/backward_inside_autocast.py"),
    ("grad_scaler", "grad_scaler/update_missing.py"),
    ("grad_accumulation", "grad_accumulation/loss_not_divided.py"),
    ("autocast", "errors/exception_in_step.py"),
    ("ddp_mixed_precision", "ddp_mixed_precision/allreduce_every_micro_batch.py"),
    ("accelerate", "reference"),
]


def verdict(result) -> tuple:
    return (
        result.status,
        result.error.kind if result.error else None,
        result.error.line if result.error else None,
        sorted((c.id, c.status) for c in result.checks),
        sorted(f.id for c in result.checks for f in c.findings),
    )


# Docker runs the same worker code as bwrap, in an image with the same PyTorch: it is held to one case of each
# kind of evidence (a pass, checks failing, a trace finding, an exception at a line, ranks, Accelerate, memory),
# bwrap to all of them.
DOCKER_CASES = {
    ("autocast", "reference"),
    ("autocast", "starter"),
    ("reduce_memory", "reference"),
    ("grad_scaler", "grad_scaler/update_missing.py"),
    ("autocast", "errors/exception_in_step.py"),
    ("ddp_mixed_precision", "ddp_mixed_precision/allreduce_every_micro_batch.py"),
    ("accelerate", "reference"),
}
PARITY_CASES = [("bwrap", *case) for case in VERDICT_CASES] + [
    ("docker", *case) for case in VERDICT_CASES if case in DOCKER_CASES
]


@pytest.mark.slow
@pytest.mark.parametrize("backend,exercise_id,case", PARITY_CASES, ids=[f"{b}-{e}-{c}" for b, e, c in PARITY_CASES])
def test_sandbox_gives_the_same_verdict_as_local(backend, exercise_id, case, launchers, exercises, grade):
    ex = exercises[exercise_id]
    source = getattr(ex, case) if case in ("reference", "starter") else (SUBMISSIONS / case).read_text()
    sandboxed = runner.run(ex, source, device="cpu", launcher=launchers(backend))
    assert sandboxed.sandbox == backend
    assert verdict(sandboxed) == verdict(grade(exercise_id, source))


def test_local_backend_is_refused_unless_allowed():
    with pytest.raises(EnvironmentProblem, match="not allowed"):
        make_launcher("local", allow_local=False)
    assert make_launcher("local", allow_local=True).isolated is False


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(EnvironmentProblem, match="unknown sandbox 'vm'"):
        make_launcher("vm")


def test_auto_prefers_an_isolating_backend():
    available = [n for n in ("docker", "bwrap") if unavailable_reason(n) is None]
    launcher = make_launcher("auto", allow_local=True)
    assert launcher.name == (available[0] if available else "local")


def test_containers_of_a_dead_grader_are_swept(launchers):
    """A grader killed mid-grading leaves its containers; the next docker launcher on the host removes them."""
    from grader.sandboxes import docker_sandbox

    launcher = launchers("docker")
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = launcher.engine.containers.create(
        docker_sandbox.IMAGE,
        ["true"],
        labels={"org.amp-dojo.worker": "1", docker_sandbox.OWNER_LABEL: f"{socket.gethostname()}:{dead.pid}"},
    )
    docker_sandbox.DockerLauncher(launcher.limits)
    assert left.id not in [c.id for c in launcher.engine.containers.list(all=True, sparse=True)]


@pytest.mark.slow
def test_a_reply_the_grader_refuses_ends_its_container_without_waiting_on_the_engine(launchers, all_exercises):
    """The grader stops reading an oversized reply and kills the container; what the container still sends must
    be drained and dropped, or the engine's kill and status calls wait on the undrained stream for their whole
    client timeout (it once held one grading 100 s, against 8 s in bwrap)."""
    started = time.monotonic()
    result = _attack("oversized_params", "docker", launchers, all_exercises)
    assert result.status == "error" and result.error.kind == "protocol", result.error
    assert time.monotonic() - started < 45


def _attack(name: str, backend: str, launchers, all_exercises, launcher=None, exercise: str = "autocast"):
    launcher = launcher or launchers(backend)
    source = (ATTACKS / f"{name}.py").read_text().replace("__MARKER__", "x")
    return runner.run(all_exercises[exercise], source, device="cpu", launcher=launcher)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_every_writable_place_together_holds_no_more_than_tmp_bytes(backend, launchers, all_exercises):
    """/tmp, /dev/shm and /dev (bwrap's is a tmpfs of half the host's memory unless made read-only) share one
    budget, with or without a memory cgroup to charge them to."""
    result = _attack("fill_every_writable_place", backend, launchers, all_exercises)
    written = re.search(r"wrote (\d+) MiB in all \((.*)\)", result.error.message)
    assert written, result.error.message
    assert 0 < int(written.group(1)) <= ATTACK_LIMITS.tmp_bytes // 1024**2, written.group(0)
    assert "/dev 0," in written.group(2) and "/dev/shm 0," not in written.group(2), written.group(0)


def _cpu_capped(backend: str) -> bool:
    from grader.sandboxes.cgroups import cpu_limit_available

    return backend == "docker" or cpu_limit_available()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_busy_processes_in_sessions_of_their_own_share_the_sandbox_cpus(backend, launchers, all_exercises):
    """Eight spinning children that left the process group use no more CPU together than the sandbox's `cpus`
    (a cpu cgroup on bwrap, nano_cpus on docker). Without a cpu cgroup bwrap has no such bound: the web worker
    then grades one submission at a time (the test below)."""
    launchers(backend)  # skips (or fails, where required) if the backend cannot run here
    if not _cpu_capped(backend):
        pytest.skip("no cpu cgroup can be made here: bwrap's CPU is bounded by grading one at a time")
    capped = make_launcher(backend, replace(ATTACK_LIMITS, cpus=0.5), allow_local=True)
    result = _attack("cpu_hog_setsid", backend, launchers, all_exercises, launcher=capped)
    used = re.search(r"used ([\d.]+) s of CPU in ([\d.]+) s", result.error.message)
    assert used, result.error.message
    cpu, wall = float(used.group(1)), float(used.group(2))
    assert cpu / wall <= 0.5 * 1.4, f"{cpu} s of CPU in {wall} s with a share of 0.5"


def test_web_worker_grades_one_at_a_time_where_bwrap_cannot_cap_cpu(monkeypatch):
    """The fallback where no cpu cgroup can be made: one grading at a time, so the host keeps its other cores
    whatever one submission's processes do. A cpu cgroup, or docker, keeps one grading per core."""
    from grader.sandboxes import cgroups
    from webapp import grading_capacity

    config = {"GRADING_CONCURRENCY": None, "POOL_SIZE": None, "DEVICE": "cpu", "SANDBOX": "bwrap"}
    monkeypatch.setattr(cgroups, "cpu_limit_available", lambda: False)
    assert grading_capacity(config) == (1, 1)
    assert grading_capacity({**config, "GRADING_CONCURRENCY": 3}) == (3, 3)  # a setting is obeyed
    monkeypatch.setattr(cgroups, "cpu_limit_available", lambda: True)
    assert grading_capacity(config) == (os.cpu_count(), os.cpu_count())
    assert grading_capacity({**config, "SANDBOX": "docker"}) == (os.cpu_count(), os.cpu_count())


def test_a_cpu_cgroup_carries_the_sandbox_cpus():
    from grader.sandboxes.cgroups import Cgroup

    group = Cgroup.create(64, None, cpus=0.25)
    if group is None or not any("cpu" in held.split("+") for held in group.limits):
        if group is not None:
            group.remove()
        pytest.skip("no cpu cgroup can be made here")
    try:
        quotas = [
            (p / name).read_text().split()[0]
            for p in group.paths
            for name in ("cpu.max", "cpu.cfs_quota_us")
            if (p / name).exists()
        ]
        assert quotas == ["25000"]
    finally:
        group.remove()
    assert all(not p.exists() for p in group.paths)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_real_time_signal_that_kills_the_code_is_worded_never_a_grader_crash(backend, launchers, all_exercises):
    """signal.Signals does not list real-time signals: a worker killed by one (40) used to crash the grader, and a
    DDP rank's supervisor to answer "ValueError: 40 is not a valid Signals"."""
    result = _attack("realtime_signal", backend, launchers, all_exercises)
    expected = {
        "local": ("crash", "signal SIGRTMIN+6"),
        "bwrap": ("exit", "status 168"),  # bwrap's init: 128 + 40
        "docker": ("exception", "did not end process 1"),
    }[backend]  # the worker is the container's init
    assert (result.error.kind, expected[1] in result.error.message) == (expected[0], True), result.error.message
    ranks = _attack("ddp_rank_realtime_signal", backend, launchers, all_exercises, exercise="ddp_mixed_precision")
    assert ranks.error.kind == "crash" and "rank 1" in ranks.error.message, ranks.error.message
    assert "signal SIGRTMIN+6" in ranks.error.message and "ValueError" not in ranks.error.message

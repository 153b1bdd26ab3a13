"""A control group per sandbox, where the grader may make one (root on cgroup
v1, or a cgroup v2 subtree with the controllers delegated): a hard cap on
processes, memory and CPU time for the whole sandbox, whatever user the code
runs as. RLIMIT_NPROC alone does not bind when the sandbox's user maps to root
outside it (bwrap started by root), RLIMIT_AS is per process, and no rlimit
bounds how many CPUs a tree of busy processes takes from the host."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
# The file whose write makes a controller's limit hold (v2 name, v1 name); the others only refine it.
DECISIVE = {
    "pids": ("pids.max",),
    "memory": ("memory.max", "memory.limit_in_bytes"),
    "cpu": ("cpu.max", "cpu.cfs_quota_us", "cpu.idle", "cpu.weight", "cpu.shares"),
}
# A background sandbox's group (trusted runs computed ahead of learners): SCHED_IDLE for the whole group where the
# kernel has cpu.idle (5.15), else the least weight. Inside its own group a process's nice value only counts
# against its siblings, so the group itself must yield to the learners' groups.
IDLE_FILES = [("cpu.idle", "1"), ("cpu.weight", "1"), ("cpu.shares", "2")]


class Cgroup:
    def __init__(self, paths: list[Path], limits: list[str]):
        self.paths = paths
        self.limits = limits  # what holds, e.g. ["pids", "memory"]: for the record, and for tests

    @classmethod
    def create(
        cls, pids_max: int, memory_bytes: int | None, cpus: float | None = None, idle: bool = False
    ) -> Cgroup | None:
        """None where no writable hierarchy is found; otherwise the limits that could be set. `cpus`: CPU time
        per wall-clock second, summed over the sandbox's processes (1.5 = one and a half cores). `idle`: the
        group gets the CPU only where no other group wants it (IDLE_FILES)."""
        name = f"amp-dojo-{secrets.token_hex(6)}"
        wanted = {"pids": [("pids.max", str(pids_max))]}
        if memory_bytes:
            wanted["memory"] = [
                ("memory.max", str(memory_bytes)),
                ("memory.swap.max", "0"),
                ("memory.limit_in_bytes", str(memory_bytes)),
                ("memory.memsw.limit_in_bytes", str(memory_bytes)),
            ]
        if cpus:
            quota = max(1000, int(cpus * PERIOD_US))
            wanted["cpu"] = [
                ("cpu.max", f"{quota} {PERIOD_US}"),
                ("cpu.cfs_period_us", str(PERIOD_US)),
                ("cpu.cfs_quota_us", str(quota)),
            ]
        if idle:
            wanted.setdefault("cpu", []).extend(IDLE_FILES)
        if (ROOT / "cgroup.controllers").exists():
            made = _make_v2(name, wanted)
        else:
            made = [m for m in (_make_v1(controller, name, files) for controller, files in wanted.items()) if m]
        if not made:
            return None
        return cls([p for p, _ in made], [c for _, c in made])

    def join(self):
        """Moves the calling process in: call it in the child before exec."""
        for path in self.paths:
            with open(path / "cgroup.procs", "w") as fh:
                fh.write("0")

    def add(self, pid: int):
        """Moves the host process `pid` in (a worker forked elsewhere, before it starts anything)."""
        for path in self.paths:
            with open(path / "cgroup.procs", "w") as fh:
                fh.write(str(pid))

    def remove(self):
        """Its processes were killed just before; the kernel may take a moment to let them go."""
        for path in self.paths:
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _own_path(controller: str) -> str:
    """This process's cgroup in a v1 controller's hierarchy (or v2's, for "")."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path.lstrip("/")
    return ""


def _write_limits(path: Path, files: list[tuple[str, str]]) -> set[str]:
    """The limit files that took their value (the others may not exist in this version)."""
    done = set()
    for filename, value in files:
        try:
            (path / filename).write_text(value)
            done.add(filename)
        except OSError:
            pass
    return done


def _holds(controller: str, written: set[str]) -> bool:
    return any(f in written for f in DECISIVE[controller])


def _make_v1(controller: str, name: str, files) -> tuple[Path, str] | None:
    base = ROOT / controller / _own_path(controller)
    try:
        (base / name).mkdir()
    except OSError:
        return None
    if _holds(controller, _write_limits(base / name, files)):
        return base / name, controller
    os.rmdir(base / name)
    return None


def _make_v2(name: str, wanted: dict) -> list[tuple[Path, str]]:
    base = ROOT / _own_path("")
    enabled = (base / "cgroup.subtree_control").read_text(errors="ignore").split()
    files = [f for controller, fs in wanted.items() if controller in enabled for f in fs]
    if not files:
        return []
    try:
        (base / name).mkdir()
    except OSError:
        return []
    written = _write_limits(base / name, files)
    holding = [c for c in wanted if c in enabled and _holds(c, written)]
    if not holding:
        os.rmdir(base / name)
        return []
    return [(base / name, "+".join(holding))]


def cpu_limit_available() -> bool:
    """Whether a sandbox made here can be held to a CPU quota: a cpu cgroup is made, limited and removed."""
    group = Cgroup.create(1024, None, cpus=1.0)
    if group is None:
        return False
    group.remove()
    return any("cpu" in held.split("+") for held in group.limits)

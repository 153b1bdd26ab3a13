"""A control group per sandbox, where the grader may make one (root on cgroup
v1, or a cgroup v2 subtree with the controllers delegated): a hard cap on
processes and on memory for the whole sandbox, whatever user the code runs as.
RLIMIT_NPROC alone does not bind when the sandbox's user maps to root outside
it (bwrap started by root), and RLIMIT_AS is per process."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


class Cgroup:
    def __init__(self, paths: list[Path], limits: list[str]):
        self.paths = paths
        self.limits = limits  # what holds, e.g. ["pids", "memory"]: for the record, and for tests

    @classmethod
    def create(cls, pids_max: int, memory_bytes: int | None) -> "Cgroup | None":
        """None where no writable hierarchy is found; otherwise the limits that could be set."""
        name = f"amp-dojo-{secrets.token_hex(6)}"
        wanted = {"pids": [("pids.max", str(pids_max))]}
        if memory_bytes:
            wanted["memory"] = [("memory.max", str(memory_bytes)), ("memory.swap.max", "0"),
                                ("memory.limit_in_bytes", str(memory_bytes)),
                                ("memory.memsw.limit_in_bytes", str(memory_bytes))]
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


def _write_limits(path: Path, files: list[tuple[str, str]]) -> bool:
    """True if at least one limit file took the value (the others may not exist in this version)."""
    done = False
    for filename, value in files:
        try:
            (path / filename).write_text(value)
            done = True
        except OSError:
            pass
    return done


def _make_v1(controller: str, name: str, files) -> tuple[Path, str] | None:
    base = ROOT / controller / _own_path(controller)
    try:
        (base / name).mkdir()
    except OSError:
        return None
    if _write_limits(base / name, files):
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
    _write_limits(base / name, files)
    return [(base / name, "+".join(c for c in wanted if c in enabled))]

"""The bubblewrap sandbox, for Linux machines without a Docker daemon.

The worker sees a read-only system (/usr and the Python that runs the grader),
the grader package alone (not exercises/, not tests/), its own code folder
read-only, a small private /tmp, and nothing else: no network, no other
processes, no host /etc, no grader environment. It runs as `nobody` in its own
user, PID, network, IPC and UTS namespaces, dies with the grader, and carries
rlimits on memory and file size; /tmp and /dev/shm are its only writable places,
`tmp_bytes` together. Where the grader can make a cgroup, the whole sandbox is
also capped in processes, memory and CPU time (`cpus`); otherwise processes are
capped by RLIMIT_NPROC, which binds only when the grader is not root, and CPU
not at all (the web worker then grades one submission at a time)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader.errors import EnvironmentProblem
from grader.sandboxes import compile_cache
from grader.sandboxes.cgroups import Cgroup
from grader.sandboxes.launcher import WORKER_PACKAGE, Launcher, make_workdir, rlimits, worker_args, worker_env
from grader.sandboxes.limits import Limits, scratch_sizes
from grader.sandboxes.process import ProcessHandle, WorkerProcess, cpu_seconds_of, pids_in_namespace
from grader.worker.isolation import WORKDIRS

INSIDE = "/sandbox"
PACKAGE_ROOT = "/opt/amp-dojo"
NVIDIA_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def unavailable_reason() -> str | None:
    """None when bwrap can make a sandbox here (it needs unprivileged user namespaces)."""
    path = bwrap_path()
    if path is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    try:
        probe = subprocess.run(
            [path, "--unshare-all", "--ro-bind", "/", "/", "--uid", "65534", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be run: {exc}"
    if probe.returncode != 0:
        return f"bwrap cannot create namespaces here: {probe.stderr.strip()[:300]}"
    return None


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ("/etc/ld.so.cache", "/etc/localtime"):
        args += ["--ro-bind-try", name, name]
    return args


def python_binds() -> list[str]:
    """The interpreter and its packages (torch), read-only, at the paths they have outside."""
    args, bound = [], []
    for prefix in sorted({sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}):
        if not prefix.startswith("/usr/") and not any(prefix.startswith(b + "/") for b in bound):
            args += ["--ro-bind", prefix, prefix]
            bound.append(prefix)
    return args


def _gpu_binds(device: str) -> list[str]:
    if not device.startswith("cuda"):
        return []
    nodes = sorted(p.name for p in Path("/dev").glob("nvidia[0-9]*")) + list(NVIDIA_DEVICES)
    args = []
    for node in nodes:
        args += ["--dev-bind-try", f"/dev/{node}", f"/dev/{node}"]
    return args


def sandbox_env() -> dict:
    env = worker_env("/tmp", 1, pythonpath=PACKAGE_ROOT)
    env.update(USER="sandbox", LOGNAME="sandbox")
    return env


def command(
    device: str,
    workdir: Path,
    limits: Limits,
    writes_compile_cache: bool = False,
    compiler: bool = False,
    zygote: tuple[int, Path] | None = None,
) -> list[str]:
    """`zygote` (socket fd, host folder of the workers' code folders): the sandbox of a zygote whose forks isolate
    themselves (grader/sandboxes/bwrap_fork.py); they need user namespaces, which every other sandbox is denied."""
    env = sandbox_env()
    args = [
        bwrap_path(),
        "--unshare-all",
        "--unshare-user",
        "--die-with-parent",
        "--new-session",
        *([] if zygote else ["--disable-userns"]),
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for name, value in env.items():
        args += ["--setenv", name, value]
    # /tmp first: the interpreter or the project may live under /tmp, and a later tmpfs would hide it.
    tmp, shm = scratch_sizes(limits)
    args += [
        "--size",
        str(tmp),
        "--perms",
        "1777",
        "--tmpfs",
        "/tmp",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(shm),
        "--perms",
        "1777",
        "--tmpfs",
        "/dev/shm",
    ]
    args += _system_binds() + python_binds() + _gpu_binds(device)
    # bwrap's /dev is a tmpfs the sandbox's user owns, as large as half the host's memory: read-only once the
    # device nodes are in, so /tmp and /dev/shm are all it can write, `tmp_bytes` together.
    # The in-sandbox package alone: `grader` is a namespace package in there, and no judge code is within reach.
    args += [
        "--ro-bind",
        str(WORKER_PACKAGE),
        f"{PACKAGE_ROOT}/grader/worker",
        "--ro-bind",
        str(workdir),
        INSIDE,
    ]
    if writes_compile_cache:  # a trusted run's (Launcher.trusted): its compile folder is the host's, to collect
        args += ["--bind", str(compile_cache.writable_folder(workdir)), f"/tmp/{compile_cache.WRITES}"]
    if zygote:
        args += ["--ro-bind", str(zygote[1]), WORKDIRS]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", INSIDE, "--", sys.executable, "-m"]
    if zygote:
        return args + ["grader.worker.zygote", str(zygote[0]), "--isolate", *worker_args(compiler)]
    return args + ["grader.worker", *worker_args(compiler)]


def child_namespace(pid: int) -> str | None:
    """The PID namespace of host process `pid`'s first child: the sandbox's, for bwrap's process or a fork that made
    one (None once it has gone)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return os.readlink(f"/proc/{children[0]}/ns/pid")
    except (OSError, IndexError):
        return None


def namespace_members(ns: str) -> list[tuple[int, list[int]]]:
    """(host pid, its pids from the host's namespace inwards: NSpid) of each process in the PID namespace `ns`."""
    found = []
    for pid in pids_in_namespace(ns):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found.append((pid, next((ln.split()[1:] for ln in status.splitlines() if ln.startswith("NSpid:")), [])))
    return found


class InOwnNamespace:
    """A handle whose processes are those of the PID namespace of its process's first child (`self.pid`: bwrap's
    process, or a fork that isolated itself), whatever process group they left for (setsid): freezing for
    timing must stop them all. `group`: its control group, removed with it."""

    group: Cgroup | None = None

    def cleanup(self):
        super().cleanup()
        if self.group is not None:
            self.group.remove()

    def _sandbox_pids(self) -> list[tuple[int, int]]:
        """(host pid, pid inside) of each process in the sandbox."""
        ns = child_namespace(self.pid)
        if ns is None:
            return []
        return [(pid, int(nspids[-1]) if nspids else 0) for pid, nspids in namespace_members(ns)]

    def cpu_seconds(self) -> float | None:
        """Every process in the sandbox's PID namespace, one that left the process group too."""
        ns = child_namespace(self.pid)
        return cpu_seconds_of(pids_in_namespace(ns)) if ns is not None else None

    def signal_worker(self, sig):
        for host, inside in self._sandbox_pids():
            if inside == 2:  # the sandbox's init is 1; the worker it started is 2
                os.kill(host, sig)

    def _signal_sandbox(self, sig):
        for host, _inside in self._sandbox_pids():
            try:
                os.kill(host, sig)
            except OSError:
                pass


class NamespaceHandle(InOwnNamespace, ProcessHandle):
    """bwrap's process and its sandbox."""

    def __init__(self, proc: subprocess.Popen, group: Cgroup | None):
        super().__init__(proc)
        self.group = group

    def signal_all(self, sig):
        self._signal_sandbox(sig)
        super().signal_all(sig)


class BwrapLauncher(Launcher):
    name = "bwrap"
    isolated = True

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        if bwrap_path() is None:
            raise EnvironmentProblem("the bwrap sandbox needs bubblewrap: apt-get install bubblewrap")

    def prepare(self, device: str, compiler: bool = False) -> WorkerProcess:
        workdir = make_workdir()
        group = Cgroup.create(self.limits.processes, self.limits.memory_bytes, self.limits.cpus, self.idle)
        try:
            return self._start(device, workdir, group, compiler)
        except Exception:
            shutil.rmtree(workdir, ignore_errors=True)
            if group is not None:
                group.remove()
            raise

    def _start(self, device: str, workdir: Path, group, compiler: bool = False) -> WorkerProcess:
        limit = rlimits(self.limits, device, processes=True, idle=self.idle)

        def prepare():
            limit()
            if group is not None:
                group.join()

        proc = subprocess.Popen(
            command(device, workdir, self.limits, self.writes_compile_cache, compiler),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": "/usr/bin:/bin"},
            start_new_session=True,
            preexec_fn=prepare,
        )
        return WorkerProcess(NamespaceHandle(proc, group), workdir, INSIDE, self.limits)

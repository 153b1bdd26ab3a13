"""bwrap's CPU workers forked from a zygote in a sandbox of its own, instead of each started from nothing.

A fresh sandbox imports PyTorch (about 2 s of CPU) and, for a lesson that compiles, torch.compile's machinery
(another 3 s) before it grades anything: on a 2-core class server that is most of every grading, and a class
that submits at once waits for it. Here one bwrap sandbox per kind of blank (plain, or with the compiler) holds
a zygote that imported all of it once (grader/worker/zygote.py --isolate); each worker is a fork of it that
makes its own user, mount, PID, network, IPC and UTS namespaces, its own /tmp and /dev/shm, its code folder
alone, no /proc and no terminals, drops every capability and may make no user namespace
(grader/worker/isolation.py), all before any learner code exists. What it shares with its siblings is the
zygote's memory, copied on write, and the read-only system every sandbox sees.

The launcher puts each fork into a control group of its own (the limits of a bwrap sandbox) before it lets it
isolate itself, so everything it starts is counted there. Where the forks cannot isolate themselves (user
namespaces refused inside a sandbox, an architecture the seccomp filter does not know), a probe fork says so
when the zygote starts, and every worker starts from nothing as before. Trusted runs, background runs and CUDA
workers always start from nothing: the first write the lesson's compile cache, the second run at the lowest
priority, and a process that touched CUDA cannot fork a working child."""

from __future__ import annotations

import atexit
import logging
import os
import resource
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from grader.sandboxes import bwrap
from grader.sandboxes.cgroups import Cgroup
from grader.sandboxes.limits import Limits, scratch_sizes
from grader.sandboxes.process import WorkerProcess
from grader.sandboxes.zygote import ForkedHandle, Zygote, add_pipes, fork_rlimits
from grader.worker import isolation

log = logging.getLogger("grader.sandboxes.bwrap_fork")
DISABLED = "AMP_DOJO_BWRAP_FORK"  # "0": every bwrap worker starts from nothing


class CannotFork(OSError):
    """Forks cannot hold a bwrap sandbox's limits on this machine: workers start from nothing instead."""


class SandboxZygote(Zygote):
    """A zygote in a bwrap sandbox; the pids it reports are in that sandbox's PID namespace."""

    def __init__(self, limits: Limits, compiler: bool):
        self.limits, self.compiler = limits, compiler
        self.workdirs = Path(tempfile.mkdtemp(prefix="amp-dojo-forks-"))
        self.workdirs.chmod(0o755)
        super().__init__()

    def _spawn(self, fd: int, home) -> subprocess.Popen:
        """No memory or process limit of its own: it is the grader's code alone, and its forks set theirs."""
        with open(self.workdirs / ".zygote.log", "wb") as log_file:  # what bwrap or the import said, for the probe
            return subprocess.Popen(
                bwrap.command("cpu", home, self.limits, compiler=self.compiler, zygote=(fd, self.workdirs)),
                pass_fds=(fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                env={"PATH": "/usr/bin:/bin"},
                start_new_session=True,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)),
            )

    def host_pid(self, inner: int) -> int | None:
        """The host pid of the zygote's child `inner` (its pid in the zygote's namespace)."""
        ns = bwrap.child_namespace(self.proc.pid)
        members = bwrap.namespace_members(ns) if ns is not None else []
        return next((pid for pid, nspids in members if len(nspids) == 2 and int(nspids[1]) == inner), None)

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.workdirs, ignore_errors=True)


class IsolatedHandle(bwrap.InOwnNamespace, ForkedHandle):
    """A forked worker: its exit status comes from the zygote, its processes are those of its own PID namespace
    (found through the zygote's child, as NamespaceHandle finds bwrap's), its limits in its own control group."""

    def __init__(self, zygote: SandboxZygote, inner: int, host: int, group: Cgroup | None, fds: list[int]):
        super().__init__(zygote, host, *fds)
        self.inner, self.group = inner, group

    def _status(self, timeout: float | None) -> int | None:
        if self.code is None:
            self.code = self.zygote.wait(self.inner, timeout)
        return self.code

    def signal_all(self, sig):
        self._signal_sandbox(sig)
        try:
            os.kill(self.pid, sig)
        except OSError:
            pass


class Forks:
    """A bwrap launcher's zygotes, one per kind of blank, started on first use; None from `prepare` where forks
    cannot isolate themselves here (then the launcher starts the worker from nothing)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.zygotes: dict[bool, SandboxZygote] = {}
        self.usable = os.environ.get(DISABLED) != "0" and isolation.supported() and not python_under_tmp()
        self.lock = threading.Lock()

    def prepare(self, compiler: bool) -> WorkerProcess | None:
        if not self.usable:
            return None
        zygote = self._zygote(compiler)
        if zygote is None:
            return None
        workdir = Path(tempfile.mkdtemp(dir=zygote.workdirs))
        workdir.chmod(0o755)
        try:
            handle = self._fork(zygote, workdir, probe=False)
        except CannotFork as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            log.warning("bwrap workers start from nothing from now on: %s", exc)
            self.usable = False
            return None
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        return WorkerProcess(handle, workdir, bwrap.INSIDE, self.limits)

    def _zygote(self, compiler: bool) -> SandboxZygote | None:
        with self.lock:
            zygote = self.zygotes.get(compiler)
            if zygote is not None and not zygote.closed:
                return zygote
            zygote = SandboxZygote(self.limits, compiler)
            if not self._probe(zygote):
                zygote.close()
                self.usable = False
                return None
            self.zygotes[compiler] = zygote
            atexit.register(zygote.close)
            return zygote

    def _probe(self, zygote: SandboxZygote) -> bool:
        """A fork that isolates itself and exits: whether this machine lets forks isolate themselves."""
        workdir = Path(tempfile.mkdtemp(dir=zygote.workdirs))
        try:
            handle = self._fork(zygote, workdir, probe=True)
            code = handle._status(self.limits.init_timeout_s)
            handle.kill()
            why = handle.stderr.read(4096).decode("utf-8", "replace").strip()
            handle.cleanup()
        except OSError as exc:  # CannotFork included
            code, why = None, str(exc)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if code != 0:
            said = (zygote.workdirs / ".zygote.log").read_bytes()[-2000:].decode("utf-8", "replace").strip()
            log.warning(
                "bwrap workers start from nothing: forks cannot isolate themselves here (exit %s: %s %s)",
                code,
                why,
                said,
            )
        return code == 0

    def _fork(self, zygote: SandboxZygote, workdir: Path, probe: bool) -> IsolatedHandle:
        tmp, shm = scratch_sizes(self.limits)
        request = {"name": workdir.name, "tmp_bytes": tmp, "shm_bytes": shm, "probe": probe}
        limits = fork_rlimits(self.limits)
        if not probe:
            limits["RLIMIT_NPROC"] = self.limits.processes
        ours, theirs = [], []
        group = None
        try:
            add_pipes(ours, theirs)
            env = bwrap.sandbox_env()
            inner = zygote.fork(bwrap.INSIDE, env, limits, theirs, timeout=self.limits.init_timeout_s, **request)
            host = zygote.host_pid(inner)
            if host is None:
                raise OSError("the forked worker is not found on the host")
            group = Cgroup.create(self.limits.processes, self.limits.memory_bytes, self.limits.cpus)
            if group is not None:
                try:
                    group.add(host)
                except OSError as exc:  # a group it cannot enter: its limits would not hold, so no forks
                    raise CannotFork(f"the forked worker cannot enter its control group: {exc}") from None
            handle = IsolatedHandle(zygote, inner, host, group, ours)
        except BaseException:
            for fd in ours:
                os.close(fd)
            if group is not None:
                group.remove()
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        handle.write(b"\n")  # go: it is in its group
        return handle

    def close(self) -> None:
        with self.lock:
            for zygote in self.zygotes.values():
                zygote.close()
            self.zygotes.clear()


def python_under_tmp() -> bool:
    """Whether the interpreter or its packages live under /tmp (a project cloned there): bwrap binds them at the
    same path, over its /tmp, and the /tmp a fork mounts for itself would hide them (and PyTorch's files with
    them) from the fork. Such a machine's workers start from nothing."""
    binds = bwrap.python_binds()
    return any(path == "/tmp" or path.startswith("/tmp/") for path in binds[2::3])


class ForkingBwrapLauncher(bwrap.BwrapLauncher):
    """The bwrap sandbox (`make_launcher("bwrap")`): a learner's CPU worker is forked where forks can isolate
    themselves here and the launcher is to grade many times (Launcher.fork); any other starts from nothing."""

    def __init__(self, limits: Limits | None = None):
        super().__init__(limits)
        self.forks = Forks(self.limits)

    def prepare(self, device: str, compiler: bool = False) -> WorkerProcess:
        if device == "cpu" and self.fork and not (self.writes_compile_cache or self.idle):
            worker = self.forks.prepare(compiler)
            if worker is not None:
                return worker
        return super().prepare(device, compiler)

    def close(self) -> None:
        self.forks.close()

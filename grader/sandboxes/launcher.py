"""The one seam through which worker processes are started. The checks only
ever see `WorkerProcess.request()`, so a sandbox (Docker, bubblewrap) is a new
launcher, not a change to grading."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.sandboxes import compile_cache
from grader.sandboxes.limits import Limits, WorkerSpec
from grader.sandboxes.process import ProcessHandle, WorkerProcess

GRADER_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the grader package

WORKER_PACKAGE = GRADER_ROOT / "grader" / "worker"  # all a sandbox gets of the grader (grader/worker/__init__.py)


def tree_hash(folder: Path) -> str:
    """Hash of the Python files under `folder`, with their paths."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def worker_env(home: str, threads: int, pythonpath: str = str(GRADER_ROOT)) -> dict:
    """A fresh environment: the grader's own variables (secrets included) never reach the code."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONPATH": pythonpath,
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": str(threads),
        # Kineto (the profiler behind the memory check) logs each profiler start and stop at level 5 ("USDT");
        # 6 silences it, so the learner's output holds only what their code printed
        "KINETO_LOG_LEVEL": "6",
        # A learner's torch.compile on a CPU: inductor would first precompile its common headers into one file
        # of hundreds of MiB, past the sandbox's file-size limit; each kernel compiles without it
        "TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS": "0",
        # and compiles its kernels in the worker itself rather than in a pool of helper processes it would start
        # inside the sandbox (under the sandbox's process and memory limits, on a loaded host)
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
        # Its compiled graphs and kernels go to a folder of its own, seeded with the lesson's trusted compile
        # cache before any code runs (grader/sandboxes/compile_cache.py); both caches on, whatever PyTorch's defaults
        "TORCHINDUCTOR_CACHE_DIR": f"{home}/{compile_cache.WRITES}",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        **OFFLINE_AND_LOOPBACK,
    }
    for name in PASSED_TO_WORKERS:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


# The sandbox has no network: libraries that would look for one are told so (Hugging Face's hub, which Accelerate
# imports), and a process group of ranks talks over loopback only.
OFFLINE_AND_LOOPBACK = {
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "DO_NOT_TRACK": "1",
    "GLOO_SOCKET_IFNAME": "lo",
    "NCCL_SOCKET_IFNAME": "lo",
}

# Device selection, and oneDNN's instruction-set cap: `ONEDNN_MAX_CPU_ISA=AVX2` makes a CPU with native
# bfloat16 emulate it like an AVX2-only one, which the test suite uses to hold every lesson to the slow kind.
PASSED_TO_WORKERS = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ONEDNN_MAX_CPU_ISA")


def worker_args(compiler: bool) -> list[str]:
    """The worker's command-line arguments after `-m grader.worker` (grader/worker/serve.py reads them)."""
    return ["--compiler"] if compiler else []


def make_workdir() -> Path:
    """A fresh, empty host folder for one worker; the sandbox user may list and read it, nothing more."""
    workdir = Path(tempfile.mkdtemp(prefix="amp-dojo-"))
    workdir.chmod(0o755)
    return workdir


class Launcher:
    """Starts blank workers (`prepare`); `start` is prepare + assign, the cold path. A pool of warm blanks
    (grader/sandboxes/pool.py) is the same launcher with the blanks made ahead of time."""

    name = "?"
    isolated = False
    idle = False  # its workers get the CPU only where nothing else wants it (background())
    writes_compile_cache = False  # its workers' kernels go to the lesson's trusted compile cache (trusted())
    # Its CPU workers may be forked from a zygote that imported PyTorch once (bwrap: grader/sandboxes/bwrap_fork.py).
    # Worth it only where a process grades many times: the zygote costs what the one grading would have saved.
    fork = True

    def prepare(self, device: str, compiler: bool = False) -> WorkerProcess:
        """A blank worker for `device`; `compiler`: one that has loaded torch.compile's machinery too
        (grader/worker/lazy_dynamo.py), for a lesson whose code compiles."""
        raise NotImplementedError

    def background(self) -> Launcher:
        """The same sandbox, its workers at the lowest CPU priority there is: for trusted runs computed ahead of
        learners (grader/judge/warming.py), so that the kernel gives the CPU to learners' gradings first."""
        import copy

        lowered = copy.copy(self)
        lowered.idle = True
        return lowered

    def trusted(self) -> Launcher:
        """The same sandbox, for a trusted run that is to be computed (the lesson's reference, its baseline):
        what its worker compiles is kept in the lesson's trusted compile cache when it closes. Only the
        grader's own code for a lesson runs in such a worker, never a learner's."""
        import copy

        writer = copy.copy(self)
        writer.writes_compile_cache = True
        return writer

    def start(self, spec: WorkerSpec) -> WorkerProcess:
        worker = self.prepare(spec.device, spec.compiler)
        if self.writes_compile_cache and spec.compile_cache:
            worker.collect_into = Path(spec.compile_cache)
        try:
            return worker.assign(spec)
        except BaseException:
            worker.close()
            raise

    def identity(self) -> str:
        """What, beyond the grader's own code, decides the numbers this launcher's workers produce (for the
        trusted-run cache): the PyTorch they run."""
        return self.name


def rlimits(limits: Limits, device: str, processes: bool = False, idle: bool = False):
    """Applied in the child before exec; the same for local and bwrap. `idle`: the lowest CPU priority too."""

    def apply():
        if idle:
            lowest_priority()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        if not device.startswith("cuda"):  # CUDA maps far more address space than it uses
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        if processes:  # counted per user namespace, so only meaningful inside one
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))

    return apply


def lowest_priority() -> None:
    """This process (and every process and thread it starts: both are inherited) runs only on CPU time nothing
    else wants: SCHED_IDLE, and nice 19 where a scheduler ignores the policy. Neither needs a privilege, and
    nothing inside can raise them again without one."""
    os.nice(19 - os.nice(0))
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux, or forbidden by a seccomp filter: nice 19 alone
        pass


class LocalLauncher(Launcher):
    """A plain child process: separate memory, but not isolated from the machine.
    For a learner checking their own code on their own computer."""

    name = "local"
    isolated = False

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()

    def prepare(self, device: str, compiler: bool = False) -> WorkerProcess:
        workdir = make_workdir()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "grader.worker", *worker_args(compiler)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=worker_env(str(workdir), 1),
                start_new_session=True,
                preexec_fn=rlimits(self.limits, device, idle=self.idle),
            )
        except Exception:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        return WorkerProcess(ProcessHandle(proc), workdir, None, self.limits)

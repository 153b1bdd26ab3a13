"""The Docker sandbox (production): each worker runs in a fresh container of the
grading image, started through the Docker SDK. No network, read-only root, a
small tmpfs /tmp and /dev/shm, user nobody, no capabilities, no-new-privileges, limits on
memory, processes and CPU, no logs kept by the engine. Only the worker's code
and the public part of the exercise are mounted (read-only); the GPU is passed
with a DeviceRequest (the same as `--gpus`) when grading on CUDA."""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import struct
import threading
import time
from pathlib import Path

from grader.sandboxes import compile_cache
from grader.sandboxes.launcher import WORKER_PACKAGE, Launcher, make_workdir, tree_hash, worker_args, worker_env
from grader.sandboxes.limits import Limits, scratch_sizes
from grader.sandboxes.process import WorkerProcess, cpu_seconds_of, pids_in_namespace

IMAGE = os.environ.get("AMP_DOJO_IMAGE", "amp-dojo-grader")
INSIDE = "/sandbox"
HASH_LABEL = "org.amp-dojo.grader-hash"
OWNER_LABEL = "org.amp-dojo.owner"  # host:pid of the grading process that started the container
TOGGLE_TRIES = 5  # a pause or unpause the engine refuses on a running container (ContainerHandle._toggle)
TOGGLE_PAUSE_S = 0.2  # the wait before the next try grows by this much each time


def code_hash() -> str:
    """Hash of the code the image holds, the in-sandbox package alone: an image built from other worker code is
    stale, and editing a message or a check leaves every image current."""
    return tree_hash(WORKER_PACKAGE)


def host_gpu(device: str) -> str:
    """The GPU to ask the engine for, as the host names it, for this process's CUDA `device`. The engine counts
    every GPU of the host, this process only those CUDA_VISIBLE_DEVICES leaves it: a worker started for the host's
    second GPU (CUDA_VISIBLE_DEVICES=1, deploy/amp-dojo-worker@.service) grades on its cuda:0, which is GPU 1 there,
    and would put every container on GPU 0 if its own index were passed on. Entries may be indices or UUIDs; the
    engine takes either."""
    index = int(device.partition(":")[2] or 0)
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        return str(index)
    visible = [v.strip() for v in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def client():
    import docker

    return docker.from_env(timeout=30)


def unavailable_reason(image: str = IMAGE) -> str | None:
    """None when the engine answers and the image holds this grader's code."""
    try:
        import docker

        engine = client()
        engine.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine here"
        return f"no Docker engine answers ({type(exc).__name__}); start one with scripts/start-docker"
    try:
        found = engine.images.get(image)
    except docker.errors.ImageNotFound:
        return f"the image {image!r} is missing: build it with scripts/build-image (or docker build -t {image} .)"
    if found.labels.get(HASH_LABEL) != code_hash():
        return (
            f"the image {image!r} was built from other grader code ({found.labels.get(HASH_LABEL)} != "
            f"{code_hash()}): rebuild it with scripts/build-image"
        )
    return None


class ContainerHandle:
    """A running container seen as a process: its attach socket is split into
    a stdout pipe (the protocol) and a stderr pipe (the learner's output)."""

    def __init__(self, container):
        self.container = container
        self.sock = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        self.raw = self.sock._sock
        out_r, self._out_w = os.pipe()
        err_r, self._err_w = os.pipe()
        self.stdout_fd = out_r
        self.stderr = os.fdopen(err_r, "rb")
        try:
            container.start()
        except Exception:
            for close in (
                self.sock.close,
                self.stderr.close,
                lambda: os.close(out_r),
                lambda: os.close(self._out_w),
                lambda: os.close(self._err_w),
            ):
                close()
            raise
        self._frozen = False
        self._pid_ns: str | None = None  # the container's PID namespace, as the host names it
        self._discard = False  # set by kill(): nobody reads the pipes any more
        for fd in (self._out_w, self._err_w):
            os.set_blocking(fd, False)  # _forward waits itself, so that kill() can end the wait
        self._pump = threading.Thread(target=self._demultiplex, daemon=True)
        self._pump.start()

    def _demultiplex(self):
        """Docker frames: 1 byte stream id, 3 zero bytes, 4 bytes big-endian length, payload."""
        try:
            while True:
                header = self._read_exact(8)
                if header is None:
                    break
                stream, length = header[0], struct.unpack(">I", header[4:])[0]
                payload = self._read_exact(length)
                if payload is None:
                    break
                self._forward(self._out_w if stream == 1 else self._err_w, payload)
        except OSError:
            pass
        finally:
            for fd in (self._out_w, self._err_w):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _forward(self, fd: int, payload: bytes):
        """Into a pipe, waiting while it is full, until kill(): from then on what the container still sends is
        dropped. The attach stream must keep being read to the end, or the engine's kill waits on it: a reply
        the grader refused to read on (128 MiB of parameters) once held each kill and status call for their
        whole 30 s client timeout."""
        view = memoryview(payload)
        while view and not self._discard:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                select.select([], [fd], [], 0.1)

    def _read_exact(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = self.raw.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def write(self, data: bytes):
        self.raw.sendall(data)

    def alive(self) -> bool:
        try:
            self.container.reload()
        except Exception:  # noqa: BLE001
            return False
        return self.container.status in ("running", "paused")

    def signal_worker(self, sig):
        try:
            self.container.kill(signal=int(sig))
        except Exception:  # noqa: BLE001 - it may have gone already
            pass

    def cpu_seconds(self) -> float | None:
        """The container's processes as the host sees them (None where the engine is on another machine)."""
        if self._pid_ns is None:
            try:
                self.container.reload()
                self._pid_ns = os.readlink(f"/proc/{self.container.attrs['State']['Pid']}/ns/pid")
            except Exception:  # noqa: BLE001 - no answer or no such process here: no figure, as with a remote engine
                return None
        return cpu_seconds_of(pids_in_namespace(self._pid_ns))

    def freeze(self):
        """The cgroup freezer stops every process in the container, forked ones included."""
        self._toggle("pause")
        self._frozen = True

    def thaw(self):
        if self._frozen:
            self._frozen = False
            self._toggle("unpause")

    def _toggle(self, action: str):
        """Pauses or unpauses, trying again while the container still runs: runc's freezer refuses now and then
        under load ("unable to freeze", moby/moby#48205), and a live learner's process must not be reported dead
        for it. Only a container that has stopped is the worker's end (OSError: the caller words how it ended);
        an engine that keeps refusing a live one is the grader's problem, never the learner's."""
        import docker
        from grader.errors import EnvironmentProblem

        for attempt in range(TOGGLE_TRIES):
            try:
                getattr(self.container, action)()
                return
            except docker.errors.APIError as exc:
                if not self.alive():
                    raise OSError(f"cannot {action} the container: {exc.explanation}") from None
                refusal = exc.explanation
            time.sleep(TOGGLE_PAUSE_S * (attempt + 1))
        raise EnvironmentProblem(
            f"the container engine would not {action} a running sandbox ({TOGGLE_TRIES} tries: {refusal})"
        )

    def kill(self):
        self._discard = True
        try:
            self.container.kill()
        except Exception:  # noqa: BLE001 - already stopped or gone
            pass

    def exit_status(self, timeout: float) -> tuple[int | None, bool]:
        try:
            code = self.container.wait(timeout=timeout)["StatusCode"]
            self.container.reload()
            oom = bool(self.container.attrs["State"].get("OOMKilled"))
        except Exception:  # noqa: BLE001 - a timeout or a container that is gone
            self.kill()
            return None, False
        return code, oom or code == 128 + signal.SIGKILL

    def cleanup(self):
        """The container is stopped by now; removing it takes the engine a few hundred ms, which the
        learner need not wait for. Not a daemon thread, so the grader's exit waits for it."""
        for closer in (self.sock.close, lambda: os.close(self.stdout_fd), self.stderr.close):
            try:
                closer()
            except OSError:
                pass
        threading.Thread(target=self._remove, name="docker-remove").start()

    def _remove(self):
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass


def volumes(workdir: Path, writes_compile_cache: bool) -> dict:
    """The code folder, read-only; a trusted run's compile folder too (Launcher.trusted), for the host to collect."""
    mounts = {str(workdir): {"bind": INSIDE, "mode": "ro"}}
    if writes_compile_cache:
        mounts[str(compile_cache.writable_folder(workdir))] = {"bind": f"/tmp/{compile_cache.WRITES}", "mode": "rw"}
    return mounts


class DockerLauncher(Launcher):
    name = "docker"
    isolated = True

    def __init__(self, limits: Limits | None = None, image: str = IMAGE):
        """Expects `unavailable_reason(image)` to have said None (grader.sandboxes.kinds.make_launcher asks it)."""
        self.limits = limits or Limits()
        self.image = image
        self.engine = client()
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._identity: str | None = None
        self.sweep()

    def sweep(self):
        """Removes workers' containers left by grading processes of this host that died (SIGKILL, OOM):
        a looping submission must not keep burning CPU or GPU after its grader is gone."""
        host = socket.gethostname()
        # sparse: no inspect call per container, which raced with containers being removed in the background
        for container in self.engine.containers.list(all=True, sparse=True, filters={"label": "org.amp-dojo.worker"}):
            labels = container.attrs.get("Labels") or {}
            owner_host, _, pid = labels.get(OWNER_LABEL, "").rpartition(":")
            if owner_host == host and pid.isdigit() and not _alive(int(pid)):
                try:
                    container.remove(force=True)
                except Exception:  # noqa: BLE001 - another sweeper got there first
                    pass

    def identity(self) -> str:
        """The image decides which PyTorch the workers run."""
        if self._identity is None:
            try:
                self._identity = f"docker:{self.engine.images.get(self.image).id}"
            except Exception:  # noqa: BLE001 - no image: no worker will start either
                return f"docker:{self.image}"
        return self._identity

    def prepare(self, device: str, compiler: bool = False) -> WorkerProcess:
        workdir = make_workdir()
        try:
            return self._start(device, workdir, compiler)
        except Exception:
            shutil.rmtree(workdir, ignore_errors=True)
            raise

    def _start(self, device: str, workdir: Path, compiler: bool = False) -> WorkerProcess:
        import docker

        device_requests = None
        if device.startswith("cuda"):
            device_requests = [docker.types.DeviceRequest(device_ids=[host_gpu(device)], capabilities=[["gpu"]])]
        env = worker_env("/tmp", 1, pythonpath="/opt/amp-dojo")
        for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):  # the device request decides the GPU
            env.pop(name, None)
        env["PATH"] = "/opt/venv/bin:/opt/conda/bin:/usr/local/bin:/usr/bin:/bin"
        limits = self.limits
        tmp, shm = scratch_sizes(limits)
        container = self.engine.containers.create(
            self.image,
            ["python3", "-m", "grader.worker", *worker_args(compiler)],
            stdin_open=True,
            detach=True,
            environment=env,
            working_dir=INSIDE,
            user="65534:65534",
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            # exec: inductor loads the kernels it compiles for a learner's torch.compile from /tmp (Docker's tmpfs is
            # noexec unless told); bwrap's /tmp allows it too, and the code could run machine code through ctypes
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={tmp}"},
            shm_size=shm,  # tmp_bytes in all (scratch_sizes)
            volumes=volumes(workdir, self.writes_compile_cache),
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            pids_limit=limits.processes,
            nano_cpus=int(limits.cpus * 1e9),
            cpu_shares=2 if self.idle else None,  # a background sandbox (Launcher.background): the least weight
            ulimits=[
                docker.types.Ulimit(name="core", soft=0, hard=0),
                docker.types.Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
            ],
            log_config=docker.types.LogConfig(type="none"),
            device_requests=device_requests,
            labels={"org.amp-dojo.worker": "1", OWNER_LABEL: self.owner},
            ipc_mode="private",
            hostname="sandbox",
        )
        try:
            handle = ContainerHandle(container)
        except Exception:
            container.remove(force=True)
            raise
        worker = WorkerProcess(handle, workdir, INSIDE, limits)
        if device.startswith("cuda"):
            worker.device_inside = "cuda"  # the one GPU the device request gave it is its cuda:0
        return worker

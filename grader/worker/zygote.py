"""`python -m grader.worker.zygote FD [--isolate] [--compiler]`: a blank worker that imports PyTorch and everything
a grading loads once (`--compiler`: torch.compile's machinery too), then forks a fresh worker for each request on
the socket FD. Importing PyTorch costs about 2 s of CPU, most of what a small grading's worker spends (and
torch.compile's another 3 s); forked, a worker starts in milliseconds. The local, unisolated launcher
(grader/sandboxes/zygote.py) runs it as a plain process; the bwrap sandbox runs it in a sandbox of its own with
`--isolate` (grader/sandboxes/bwrap_fork.py), where each fork makes its own namespaces before it serves
(grader/worker/isolation.py).

A request carries the worker's folder, environment and limits, with its stdin, stdout and stderr as file
descriptors; the reply is the worker's pid, and later its exit status (this process is its parent). An isolated
fork waits for one byte on its stdin before it isolates itself: the launcher sends it once the fork is in its
control group, so that everything the fork starts is counted there."""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import tempfile
import threading
import time

from grader.worker import compiling, isolation, serve
from grader.worker.channel import Channel

MAX_REQUEST = 1 << 20


def main():
    sock = socket.socket(fileno=int(sys.argv[1]))
    isolated, compiler = "--isolate" in sys.argv[2:], "--compiler" in sys.argv[2:]
    serve.ready_process(compiler=compiler)
    if compiler:
        try:
            compiling.warm()
        except Exception as exc:  # noqa: BLE001 - the forks then set inductor up on their first compile, as before
            print(f"the zygote's warm-up compile failed: {exc!r}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    lock = threading.Lock()

    def send(message: dict) -> None:
        with lock:
            sock.send(json.dumps(message).encode())

    threading.Thread(target=_reap, args=(send,), name="reaper", daemon=True).start()
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, MAX_REQUEST, 3)
        except OSError:
            break
        if not data:  # the launcher is gone; its workers are killed by their launcher, not here
            break
        with lock:  # never fork while the reaper holds the lock the child would inherit held
            pid = os.fork()
        if pid == 0:
            _become_worker(sock, json.loads(data), fds, isolated)
        for fd in fds:
            os.close(fd)
        send({"pid": pid})
    os._exit(0)


def _reap(send) -> None:
    """Waits for every forked worker and reports how it ended (as subprocess.Popen.returncode would)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(0.02)
            continue
        try:
            send({"exited": pid, "code": os.waitstatus_to_exitcode(status)})
        except OSError:
            return


def _become_worker(sock: socket.socket, request: dict, fds: list[int], isolated: bool = False) -> None:
    """In the fork: the same process `python -m grader.worker` would be, started in `request["cwd"]` with its
    environment, limits and pipes, in a session of its own. Never returns."""
    started = False
    try:
        sock.close()
        os.setsid()
        for fd, target in zip(fds, (0, 1, 2)):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        if isolated:
            if os.read(0, 1) != b"\n":  # the launcher's go: this process is in its control group now
                os._exit(71)
            isolation.isolate(request["name"], request["cwd"], request["tmp_bytes"], request["shm_bytes"])
            if request.get("probe"):  # the launcher asks whether isolating works here: it does
                os._exit(0)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # gettempdir() caches the zygote's folder; this worker's TMPDIR is its own
        sys.path[0] = request["cwd"]  # `python -m` puts the folder it starts in first
        sys.argv = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "__main__.py")]
        for name, value in request["rlimits"].items():
            resource.setrlimit(getattr(resource, name), (value, value))
        channel = Channel()
        channel.write({"ok": True, "ready": True})
        started = True
        serve.serve(channel)
    except BaseException as exc:  # noqa: BLE001 - it ends the process either way; before learner code, it says why
        if not started:  # no learner code has run: the launcher's log says why the sandbox did not start
            os.write(2, f"the forked worker did not start: {exc!r}\n".encode())
    finally:
        os._exit(70)


if __name__ == "__main__":
    main()

"""Several ranks in one sandbox. For a lesson with `workload.ranks: N`, the
blank worker the sandbox started (`python -m grader.worker`, PyTorch already
imported) becomes a small supervisor when its `init` arrives: it forks N rank
processes, each a worker of its own with a process group the grader
initialises (rendezvous through a file in the sandbox's private /tmp, traffic
on loopback only). The supervisor relays every command of the grading
process, the init first, to all ranks and answers with all their replies at
once.

Nothing here decides anything. Everything in the sandbox is the learner's:
a rank may write to the supervisor's channel or kill it, so the grading
process checks each rank's reply like any worker's, loads every rank's
parameters itself and decides whether the ranks agree. The sandbox's limits
hold for the whole tree: the ranks are in its process group, PID namespace
or container, and die with it."""

from __future__ import annotations

import faulthandler
import json
import os
import select
import signal
import sys
import tempfile
import threading
import time

from grader.worker.wire import death_failure, failure, parse_reply

GRACE_S = 1.0  # after one rank fails, how long the others get to answer (one blocked in a collective never does)
EXIT_WAIT_S = 2.0
RENDEZVOUS_ENV = "AMP_DOJO_RENDEZVOUS"


def rank_device(device: str, rank: int, world_size: int) -> tuple[str, str]:
    """(this rank's device, the process group's backend). CPU ranks use gloo. On CUDA each rank gets a GPU of
    its own with nccl where there are enough; otherwise all share the given GPU and talk through gloo, since
    nccl refuses two ranks on one device."""
    if not device.startswith("cuda"):
        return "cpu", "gloo"
    import torch

    index = int(device.partition(":")[2] or 0)
    if world_size > 1 and torch.cuda.device_count() >= index + world_size:
        return f"cuda:{index + rank}", "nccl"
    return f"cuda:{index}", "gloo"


def join(rank: int, world_size: int, device: str, backend: str):
    """Initialises the default process group, as torchrun and init_process_group would for the learner."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    rendezvous = os.environ.get(RENDEZVOUS_ENV)
    if not rendezvous:  # a single process (the FP32 baseline): a group of one of its own
        rendezvous = os.path.join(tempfile.mkdtemp(prefix="amp-dojo-group-"), "rendezvous")
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(
        backend, init_method=f"file://{rendezvous}", rank=rank, world_size=world_size, timeout=timedelta(seconds=300)
    )


class Rank:
    """The supervisor's side of one rank: its pid and the two pipes of its protocol."""

    def __init__(self, index: int, pid: int, stdin: int, stdout: int):
        self.index, self.pid, self.stdin, self.stdout = index, pid, stdin, stdout
        self.buffer = bytearray()
        self.status: int | None = None
        self.dumps: int | None = None  # the read end of its stack-dump pipe (relay_dumps)

    def send(self, data: bytes) -> bool:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.stdin, view) :]
            return True
        except OSError:
            return False

    def read(self) -> dict | None:
        """Its reply once a whole line has come; a death or garbage becomes an error shaped like a worker's."""
        try:
            chunk = os.read(self.stdout, 1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            return {"ok": False, "error": self.death()}
        self.buffer += chunk
        return self.buffered()

    def buffered(self) -> dict | None:
        """A whole line that came with an earlier read (a rank may write two at once), parsed."""
        end = self.buffer.find(b"\n")
        if end < 0:
            return None
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        reply = parse_reply(line)
        return reply if reply is not None else {"ok": False, "error": failure("protocol", "error.not_a_reply")}

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                break
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def kill(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self.wait(5)

    def death(self) -> dict:
        """How the rank ended, worded as a worker's death; a SIGKILL is read as the memory limit's kill."""
        if not self.wait(2):  # it closed its channel but lives on
            self.kill()
        status = self.status or 0
        if os.WIFSIGNALED(status):
            return death_failure(-os.WTERMSIG(status), oom=os.WTERMSIG(status) == signal.SIGKILL)
        return death_failure(os.WEXITSTATUS(status) if os.WIFEXITED(status) else status, oom=False)


def _prewarm():
    """What every rank needs beyond a blank worker's preload, loaded once before forking them: DDP's constructor
    asks torch._dynamo for its mode, which loads the real module (seconds of CPU per process; see
    grader/worker/lazy_dynamo.py). Nothing here touches a GPU, which a forked child could not use; an import that fails
    here is simply left to the ranks."""
    try:
        import torch._dynamo.utils
        import torch.distributed
        import torch.nn.parallel.distributed  # noqa: F401
    except Exception:  # noqa: BLE001
        pass


_DUMP_FILE = None  # a rank's stack-dump pipe, kept open for faulthandler


def _fork_rank(index: int, world_size: int, rendezvous: str, supervisor_fds: list[int], serve) -> Rank:
    cmd_r, cmd_w = os.pipe()
    reply_r, reply_w = os.pipe()
    dump_r, dump_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the rank
        global _DUMP_FILE
        try:
            os.dup2(cmd_r, 0)
            os.dup2(reply_w, 1)
            for fd in {cmd_r, cmd_w, reply_r, reply_w, dump_r, *supervisor_fds} - {0, 1, 2}:
                os.close(fd)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            # Its own pipe, not the shared stderr: faulthandler writes a dump in many small pieces, and two ranks
            # dumping at once interleave them mid-line (the grader then finds no learner line in them).
            _DUMP_FILE = os.fdopen(dump_w, "w")
            faulthandler.register(signal.SIGUSR1, file=_DUMP_FILE, all_threads=True)
            _die_with_parent()
            os.environ.update(
                {
                    "RANK": str(index),
                    "LOCAL_RANK": str(index),
                    "WORLD_SIZE": str(world_size),
                    "LOCAL_WORLD_SIZE": str(world_size),
                    RENDEZVOUS_ENV: rendezvous,
                }
            )
            from grader.worker.channel import Channel

            serve(Channel(), index, world_size)
        finally:
            os._exit(1)
    os.close(cmd_r)
    os.close(reply_w)
    os.close(dump_w)
    supervisor_fds += [cmd_w, reply_r, dump_r]
    rank = Rank(index, pid, cmd_w, reply_r)
    rank.dumps = dump_r
    return rank


def relay_dumps(fds: list[int]) -> None:
    """Copies the ranks' stack dumps to stderr a whole line at a time (one write each, atomic on a pipe), so that
    dumps of several ranks at once never interleave within a line. Ends when every rank has closed its pipe."""
    partial = {fd: b"" for fd in fds}
    while partial:
        ready, _, _ = select.select(list(partial), [], [])
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                lines = [partial.pop(fd)]
            else:
                *lines, partial[fd] = (partial[fd] + chunk).split(b"\n")
            for line in filter(None, lines):
                try:
                    os.write(2, line + b"\n")
                except OSError:
                    pass


def _die_with_parent():
    """A rank whose supervisor is gone has nobody to answer (PR_SET_PDEATHSIG; Linux only)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def relay(ranks: list[Rank], line: bytes) -> dict:
    """Sends one command to every rank and gathers their replies: all of them, or, once one rank has failed, the
    ones that come within GRACE_S (the others may be waiting in a collective for the one that failed)."""
    replies: dict[int, dict] = {}
    for rank in ranks:
        if not rank.send(line):
            replies[rank.index] = {"ok": False, "error": rank.death()}
    deadline = time.monotonic() + GRACE_S if replies else None
    for rank in ranks:
        if rank.index not in replies and (reply := rank.buffered()) is not None:
            replies[rank.index] = reply
    if any(reply.get("ok") is not True for reply in replies.values()):
        deadline = deadline or time.monotonic() + GRACE_S
    while len(replies) < len(ranks):
        waiting = [r for r in ranks if r.index not in replies]
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([r.stdout for r in waiting], [], [], timeout)
        if not ready and deadline is not None:
            break
        for rank in waiting:
            if rank.stdout in ready and (reply := rank.read()) is not None:
                replies[rank.index] = reply
                if reply.get("ok") is not True and deadline is None:
                    deadline = time.monotonic() + GRACE_S
    return combined(replies, len(ranks))


def combined(replies: dict[int, dict], world_size: int) -> dict:
    """{"ok": true, "ranks": [reply of rank 0, ...]}, or one failing rank's error, tagged with its rank, beside the
    replies of the ranks that did answer (their traces can name the cause). A rank that died comes first: the
    others' errors are then the collective library noticing (gloo: "Connection closed by peer"); otherwise the
    lowest failing rank."""
    failed = sorted(
        (i for i, reply in replies.items() if reply.get("ok") is not True),
        key=lambda i: (_kind(replies[i]) not in DEATHS, i),
    )
    if not failed:
        return {"ok": True, "ranks": [replies[i] for i in range(world_size)]}
    error = replies[failed[0]].get("error")
    if not isinstance(error, dict):
        error = failure("protocol", "error.protocol")
    answered = [replies[i] if i in replies and i not in failed else None for i in range(world_size)]
    return {"ok": False, "error": {**error, "rank": failed[0]}, "ranks": answered}


DEATHS = ("exit", "crash", "oom")


def _kind(reply: dict):
    error = reply.get("error")
    return error.get("kind") if isinstance(error, dict) else None


def shutdown(ranks: list[Rank]):
    for rank in ranks:
        rank.send(b'{"cmd": "exit"}\n')
    deadline = time.monotonic() + EXIT_WAIT_S
    for rank in ranks:
        if not rank.wait(max(0.0, deadline - time.monotonic())):
            rank.kill()


def supervise(channel, init: dict, serve):
    """The sandbox's worker, once its `init` says the code runs as several ranks: forks them, hands each the
    init, then relays every command until exit; each rank answers in `serve` (grader/worker/serve.py), passed in
    so that this module need not import the one that imports it. Never returns."""
    world_size = init["spec"]["ranks"]
    import torch

    if torch.cuda.is_initialized():  # a forked child cannot use a CUDA context its parent made
        from grader.worker.errors import StepError

        raise StepError("internal", "the grader initialised CUDA in the worker before forking its ranks")
    if not str(init["spec"]["device"]).startswith("cuda"):
        _prewarm()  # on CUDA each rank imports for itself: importing may query the driver, which a fork cannot share
    rendezvous = os.path.join(tempfile.mkdtemp(prefix="amp-dojo-ranks-"), "rendezvous")
    own = [channel.inp.fileno(), channel.out.fileno()]
    sys.stdout.flush()
    sys.stderr.flush()
    ranks = [_fork_rank(i, world_size, rendezvous, own, serve) for i in range(world_size)]
    threading.Thread(target=relay_dumps, args=([r.dumps for r in ranks],), name="rank-dumps", daemon=True).start()

    def forward(sig, _frame):  # the grader's SIGUSR1 asks for stack dumps (a timeout): each rank writes its own
        for rank in ranks:
            try:
                os.kill(rank.pid, sig)
            except OSError:
                pass

    def stop(_sig, _frame):
        for rank in ranks:
            rank.kill()
        os._exit(1)

    signal.signal(signal.SIGUSR1, forward)
    signal.signal(signal.SIGTERM, stop)
    line = json.dumps(init)
    while line and not _is_exit(line):
        channel.write(relay(ranks, line.encode() if line.endswith("\n") else (line + "\n").encode()))
        line = channel.inp.readline()
    shutdown(ranks)
    channel.out.flush()
    os._exit(0)


def _is_exit(line: str) -> bool:
    try:
        msg = json.loads(line)
    except ValueError:
        return False
    return isinstance(msg, dict) and msg.get("cmd") == "exit"

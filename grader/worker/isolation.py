"""A forked worker's own sandbox, made inside the bwrap sandbox its zygote runs in (grader/sandboxes/bwrap_fork.py).

The zygote has imported PyTorch once; each worker it forks must be as alone as one bwrap started from nothing:
no other worker's files, processes, sockets or memory within reach. `isolate` gives the fork new user, mount,
PID, network, IPC and UTS namespaces, then, in them: its own /tmp and /dev/shm (tmpfs, sized), its own code folder
at the place every worker sees it (the others' hidden), no /proc (the outer one lists the other workers'
processes; a new one can only be mounted beside a /proc that shows all, which bwrap's never does), no /dev/pts
(one terminal instance is shared), loopback up, every capability dropped, and a seccomp filter that refuses new
user namespaces (as bwrap's --disable-userns and Docker's default profile do), so its mounts stay locked.

Like everything in grader/worker it runs beside learner code and depends on nothing outside the worker package;
it runs before the learner's code exists, in the fork, where the process has a single thread."""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import socket
import struct

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x10000000, 0x20000000, 0x40000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 24, 38, 47
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
# The syscalls the filter looks at, per architecture: (audit arch, clone, unshare, clone3)
ARCHES = {"x86_64": (0xC000003E, 56, 272, 435), "aarch64": (0xC00000B7, 220, 97, 435)}
WORKDIRS = "/workdirs"  # where the zygote's sandbox sees every worker's code folder; each worker its own alone

_libc = ctypes.CDLL(None, use_errno=True)


def supported() -> bool:
    """The filter is written for these architectures only; elsewhere workers start from nothing."""
    return platform.machine() in ARCHES


def isolate(name: str, inside: str, tmp_bytes: int, shm_bytes: int) -> None:
    """Returns only in the worker: pid 2 of a new PID namespace, with code folder WORKDIRS/name at `inside`.
    The process that calls it and pid 1 (its init, which reaps) wait and pass the worker's exit status on, so the
    zygote sees the worker's status; when pid 1 ends, the kernel kills everything left in the namespace."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(NAMESPACES), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _pass_status_of(os.fork())  # the caller stays outside the namespace (the zygote's child) and waits
    _check(_prctl(PR_SET_PDEATHSIG, 9), "prctl(PDEATHSIG)")  # pid 1 dies with the caller
    _mount_own_folders(name, inside, tmp_bytes, shm_bytes)
    _loopback_up()
    _drop_privileges()
    worker = os.fork()
    if worker != 0:
        _init(worker)
    _check(_prctl(PR_SET_PDEATHSIG, 9), "prctl(PDEATHSIG)")


def _mount_own_folders(name: str, inside: str, tmp_bytes: int, shm_bytes: int) -> None:
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing mounted here reaches the zygote's namespace
    scratch = MS_NOSUID | MS_NODEV
    _mount("tmpfs", "/tmp", "tmpfs", scratch, f"size={tmp_bytes},mode=1777")
    _mount("tmpfs", "/dev/shm", "tmpfs", scratch, f"size={shm_bytes},mode=1777")
    _mount(f"{WORKDIRS}/{name}", inside, None, MS_BIND)
    _mount(None, inside, None, MS_REMOUNT | MS_BIND | MS_RDONLY | scratch)
    hidden = MS_RDONLY | scratch | MS_NOEXEC
    for folder in (WORKDIRS, "/dev/pts", "/proc"):  # the other workers' folders, terminals and processes
        _mount("tmpfs", folder, "tmpfs", hidden, "size=4096,mode=0555")


def _loopback_up() -> None:
    """A new network namespace starts with loopback down; ranks of one grading talk over it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _drop_privileges() -> None:
    """No capability in any set, none to regain (no_new_privs), and no new user namespace to get some in."""
    _check(_prctl(PR_CAP_AMBIENT, 4), "prctl(CAP_AMBIENT_CLEAR_ALL)")
    for cap in range(64):
        if _prctl(PR_CAPBSET_DROP, cap) != 0:
            break  # past the last capability this kernel knows
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")
    _check(_prctl(PR_SET_NO_NEW_PRIVS, 1), "prctl(NO_NEW_PRIVS)")
    _no_new_user_namespaces()


def _no_new_user_namespaces() -> None:
    """seccomp: clone and unshare with CLONE_NEWUSER fail with EPERM; clone3, whose flags a filter cannot read,
    with ENOSYS, so that libc falls back to clone (Docker's default profile does the same)."""
    arch, clone, unshare, clone3 = ARCHES[platform.machine()]
    eperm, enosys, allow, kill = 0x00050000 | 1, 0x00050000 | 38, 0x7FFF0000, 0x80000000
    ld_w_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [
        (ld_w_abs, 0, 0, 4),  # seccomp_data.arch: another ABI (i386) is killed
        (jeq, 1, 0, arch),
        (ret, 0, 0, kill),
        (ld_w_abs, 0, 0, 0),  # seccomp_data.nr
        (jge, 0, 1, 0x40000000),  # x32's numbers, which would pass the comparisons below
        (ret, 0, 0, enosys),
        (jeq, 0, 1, clone3),
        (ret, 0, 0, enosys),
        (jeq, 1, 0, clone),
        (jeq, 0, 3, unshare),
        (ld_w_abs, 0, 0, 16),  # seccomp_data.args[0], low half: the flags of both
        (jset, 0, 1, CLONE_NEWUSER),
        (ret, 0, 0, eperm),
        (ret, 0, 0, allow),
    ]
    filters = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buffer = ctypes.create_string_buffer(filters)
    prog = struct.pack("HxxxxxxQ", len(program), ctypes.addressof(buffer))
    _check(_prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(prog)), "seccomp")


def _init(worker: int) -> None:
    """pid 1: reaps every orphan the code leaves, and ends with the worker's status. Never returns."""
    try:
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == worker:
                os._exit(_code(status))
    finally:
        os._exit(70)


def _pass_status_of(child: int) -> None:
    """In the parent: waits for `child` and ends with its status. In the child (0): returns."""
    if child == 0:
        return
    try:
        _pid, status = os.waitpid(child, 0)
        os._exit(_code(status))
    finally:
        os._exit(70)


def _code(status: int) -> int:
    """An exit status passed on as bwrap passes it on: a signal as 128 + its number."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _prctl(option: int, arg, *rest) -> int:
    """prctl with every argument as wide as the kernel reads it."""
    args = [ctypes.c_ulong(a) if isinstance(a, int) else a for a in (arg, *rest)]
    args += [ctypes.c_ulong(0)] * (4 - len(args))
    return _libc.prctl(ctypes.c_int(option), *args)


def _mount(source, target, fstype, flags, data=None) -> None:
    source, target_b, fstype, data = (s.encode() if s is not None else None for s in (source, target, fstype, data))
    _check(_libc.mount(source, target_b, fstype, ctypes.c_ulong(flags), data), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")

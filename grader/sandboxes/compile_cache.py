"""The trusted compile cache: what inductor compiled for a lesson's trusted runs (its FX graph and AOT autograd
caches, the C++ or Triton kernels), kept on the host and handed to every later worker of that lesson, so that a
learner whose compiled graph matches the reference's loads the reference's kernels instead of compiling them
again (a compile_autocast grading spends most of its time in inductor's C++ compiles otherwise).

Who writes it decides whether it can be trusted, so only a trusted run's worker writes, and only through the
host: it compiles into a folder of its own that the host merges into the cache when the worker closes
(`collect`). Every other worker (the learner's) gets a copy of its lesson's cache in its read-only code folder
(`provide`), which it copies into its own writable compile folder (TORCHINDUCTOR_CACHE_DIR, in the sandbox's
private /tmp) before any code runs; inductor reads and writes there. So what a submission compiles dies with
its sandbox: it never reaches the host's cache, nor any other submission. A trusted worker gets no copy: it
compiles from scratch, so that its compile time, which bounds a learner's whole grading (grader/judge/budget.py),
stays what a learner whose graph differs from the reference's needs. What a learner can read is its own
lesson's trusted entries: the reference's compiled graph, which says no more than the lesson text does
(docs/security.md)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

IN_CODE_FOLDER = "compile-cache"  # the lesson's trusted entries, in the worker's read-only code folder
WRITES = "inductor"  # a worker's own compile folder, in its home (the sandbox's /tmp, or a local workdir)
SKIPPED = ("locks",)  # inductor's lock files: per process, never worth sharing (and opened for writing)


def default_root() -> Path:
    """$AMP_DOJO_COMPILE_CACHE, else $XDG_CACHE_HOME/amp-dojo/compile-cache, else ~/.cache/amp-dojo/compile-cache."""
    if os.environ.get("AMP_DOJO_COMPILE_CACHE"):
        return Path(os.environ["AMP_DOJO_COMPILE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "amp-dojo" / "compile-cache"


def _ignored(_folder, names):
    return [n for n in names if n in SKIPPED or n.startswith(".")]  # and the host's own files: .complete, .tmp-


def provide(trusted: Path | None, workdir: Path) -> None:
    """Copies the lesson's trusted entries into the worker's code folder, readable by the sandbox user (who is
    not the grader's user under Docker); nothing when there are none yet."""
    if trusted is None or not any(files for _, _, files in os.walk(trusted)):
        return
    into = workdir / IN_CODE_FOLDER
    shutil.copytree(trusted, into, ignore=_ignored, dirs_exist_ok=True)
    for folder, _dirs, files in os.walk(into):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


def collect(written: Path, trusted: Path) -> None:
    """Merges what a trusted worker compiled into the lesson's trusted cache. Each file lands whole (copied
    beside, then renamed), so a worker reading the cache at the same time never sees half a kernel; a file
    already there is kept (inductor's names are hashes of what they hold)."""
    for folder, dirs, files in os.walk(written):  # nothing when the worker compiled nothing
        dirs[:] = [d for d in dirs if d not in SKIPPED]
        target = trusted / Path(folder).relative_to(written)
        for name in files:
            if (target / name).exists() or name.startswith(".tmp-"):
                continue
            target.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target, prefix=".tmp-")
            os.close(fd)
            try:
                shutil.copyfile(os.path.join(folder, name), tmp)
                os.replace(tmp, target / name)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise


def writable_folder(workdir: Path) -> Path:
    """The host side of a trusted worker's compile folder (bound writable where the sandbox's lies)."""
    folder = workdir / WRITES
    folder.mkdir(exist_ok=True)
    folder.chmod(0o777)  # Docker's sandbox user is not the grader's
    return folder

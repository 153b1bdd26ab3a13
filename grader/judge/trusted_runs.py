"""Trusted runs (the public FP32 baseline, the hidden reference) kept across
processes, restarts and machines. A trusted run depends on nothing a learner
sends: only on the lesson, the device, the PyTorch that ran it and the
grader's own code. Keyed by all of those, one stored run serves every
grading of that lesson there, so neither a restart of the web app nor a
`grader check` recomputes a baseline that exists.

Stores: a folder (the web app's instance folder, or the user's cache folder
for the CLI) or the grading queue's key-value storage (Redis: shared by every
grading machine). Both hold only what trusted processes produced; the store
itself must be writable by the grader alone (learner code runs in sandboxes
that cannot reach it)."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
from functools import lru_cache
from pathlib import Path

log = logging.getLogger("grader.judge.trusted_runs")
FIELDS = ("losses", "scales", "traces", "coverage", "memory", "params", "census", "top_ops", "seconds", "overflow")
# 2: a profiling lesson's given step keeps its census and torch.profiler table; 3: the run's own time; 4: the
# overflowed step inside the window, with the weights before it
FORMAT = 4


@lru_cache(maxsize=1)
def grader_hash() -> str:
    """All of the grader's code, not the image's part alone: how the judge drives a trusted run changes it too."""
    from grader.sandboxes.launcher import GRADER_ROOT, tree_hash

    return tree_hash(GRADER_ROOT / "grader")


def device_model(device: str) -> str:
    """The device's make and model; on a CPU also the instruction-set cap, which changes oneDNN's kernels."""
    import torch

    if device.startswith("cuda"):
        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    from grader.judge.cpu import bf16_support

    support = bf16_support()
    return f"cpu:{support.model}:{','.join(support.flags)}:{os.environ.get('ONEDNN_MAX_CPU_ISA', '')}"


def key(role: str, exercise_json: str, device: str, launcher_identity: str) -> str:
    import torch

    parts = [FORMAT, role, exercise_json, device_model(device), torch.__version__, grader_hash(), launcher_identity]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def dumps(run) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save({name: getattr(run, name) for name in FIELDS}, buffer)
    return buffer.getvalue()


def loads(data: bytes, make):
    """`make(**fields)` builds the run (runner.RunData). Plain tensors and containers only (weights_only)."""
    import torch

    fields = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    return make(**{name: fields[name] for name in FIELDS})


class DirectoryStore:
    """One file per run, written atomically (a reader never sees half a file)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def get(self, name: str) -> bytes | None:
        try:
            return (self.path / f"{name}.pt").read_bytes()
        except OSError:
            return None

    def put(self, name: str, data: bytes) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, self.path / f"{name}.pt")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class KeyValueStore:
    """The grading queue's storage (Huey's key-value store: SQLite or Redis), shared by its workers."""

    PREFIX = "amp-dojo:trusted:"

    def __init__(self, huey):
        self.huey = huey

    def get(self, name: str) -> bytes | None:
        return self.huey.get(self.PREFIX + name, peek=True)

    def put(self, name: str, data: bytes) -> None:
        self.huey.put(self.PREFIX + name, data)


def user_cache_dir() -> Path:
    """Where `grader check` keeps trusted runs: $AMP_DOJO_CACHE, else $XDG_CACHE_HOME/amp-dojo, else
    ~/.cache/amp-dojo."""
    if os.environ.get("AMP_DOJO_CACHE"):
        return Path(os.environ["AMP_DOJO_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "amp-dojo" / "trusted-runs"


def fetch(store, name: str, make):
    """The stored run, or None (also when it cannot be read: it is then computed again)."""
    if store is None:
        return None
    try:
        data = store.get(name)
        return loads(data, make) if data else None
    except Exception:  # noqa: BLE001 - a damaged or foreign entry is a cache miss, never a verdict
        log.warning("trusted run %s could not be read from the store; computing it again", name[:12])
        return None


def keep(store, name: str, run) -> None:
    if store is None:
        return
    try:
        store.put(name, dumps(run))
    except Exception:  # noqa: BLE001 - a full disk must not fail a grading
        log.warning("trusted run %s could not be stored", name[:12], exc_info=True)

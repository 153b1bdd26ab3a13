"""What this CPU does with bfloat16 matmuls. CPUs with AVX512-BF16 or AMX run
them natively; AVX2-only ones emulate them, and bfloat16 autocast then runs
10-20x slower than float32. Gradings still work there (lessons are sized for
it), but an admin or a learner should know why a grading takes seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.errors import EnvironmentProblem
from grader.judge.cache import user_cache_dir
from grader.lesson.check_specs import FAST_CPU
from grader.lesson.schema import Exercise
from grader.wording.catalog import Said, say

NATIVE_FLAGS = ("avx512_bf16", "amx_bf16")
# oneDNN's instruction-set names at or below which bfloat16 is emulated
EMULATED_ISAS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE", "AVX512_CORE_VNNI")


@dataclass
class Bf16Support:
    model: str
    flags: list[str]
    isa_cap: str | None  # ONEDNN_MAX_CPU_ISA, when set

    @property
    def native(self) -> bool:
        capped = self.isa_cap is not None and self.isa_cap.upper() in EMULATED_ISAS
        return bool(self.flags) and not capped

    def describe(self) -> str:
        flags = ", ".join(self.flags) or f"no {' or '.join(NATIVE_FLAGS)}"
        if self.native:
            return f"CPU: {self.model} ({flags}): bfloat16 matmuls run natively"
        why = f"ONEDNN_MAX_CPU_ISA={self.isa_cap} caps oneDNN" if self.flags else "this CPU has no bfloat16 units"
        return (
            f"CPU: {self.model} ({flags}): bfloat16 matmuls are EMULATED ({why}); bfloat16 autocast runs "
            "10-20x slower than float32 here, so gradings take longer (lessons are sized for it)"
        )


def bf16_support(cpuinfo: str | None = None) -> Bf16Support:
    model, flags = _cpuinfo(cpuinfo)
    return Bf16Support(model, [f for f in NATIVE_FLAGS if f in flags], os.environ.get("ONEDNN_MAX_CPU_ISA"))


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    return _cpuinfo(cpuinfo)[1]


def _cpuinfo(cpuinfo: str | None) -> tuple[str, set[str]]:
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    model, flags = "unknown", set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model == "unknown":
            model = value.strip()
        elif key.strip() == "flags":
            flags |= set(value.split())
    return model, flags


def resolve_device(device: str = "auto") -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EnvironmentProblem(
            "--device cuda was asked for, but PyTorch sees no CUDA device here "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'})"
        )
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise EnvironmentProblem(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


def amp_dtype_for(exercise: Exercise, device: str) -> str:
    amp = exercise.workload.amp
    return amp.cuda_dtype if device.startswith("cuda") else amp.cpu_dtype


# -- which CPUs can show a 16-bit speedup ---------------------------------------------------------------------
# A CPU's 16-bit matmuls beat float32 only where oneDNN runs them on AMX tiles (measured: a 512x2048 @ 2048x2048
# forward 4x faster in bfloat16 with AMX, slower than float32 with AVX512-BF16 alone). What decides it is the
# kernel oneDNN really picks under the instruction-set cap in force (ONEDNN_MAX_CPU_ISA), not the CPU's name or
# flags, so a worker-like process runs one autocast matmul with oneDNN's verbose log on and the kernel it names
# is read back.


_PROBE = """
import torch
torch.set_num_threads(1)
layer = torch.nn.Linear(256, 256)
with torch.autocast("cpu", dtype=getattr(torch, {dtype!r})):
    layer(torch.randn(256, 256))
"""


@dataclass(frozen=True)
class MatmulKernel:
    """What oneDNN ran for one 16-bit autocast matmul on this CPU: its implementation name (e.g.
    `brg_matmul:avx10_1_512_amx`), or None where oneDNN ran none (PyTorch's own, emulated kernel)."""

    dtype: str
    implementation: str | None
    isa_cap: str | None
    no_amx: bool = False  # the CPU has no AMX at all, so nothing was asked

    @property
    def fast(self) -> bool:
        return self.implementation is not None and "amx" in self.implementation.lower()

    def why_not_fast(self) -> Said:
        capped = "_capped" if self.isa_cap else ""
        if self.no_amx:
            return say("cpu.no_amx", dtype=self.dtype)
        if self.implementation is None:
            return say("cpu.emulated" + capped, dtype=self.dtype, cap=self.isa_cap)
        return say("cpu.kernel" + capped, dtype=self.dtype, kernel=self.implementation, cap=self.isa_cap)


def parse_kernel(verbose_log: str) -> str | None:
    """The implementation column of the first matmul (or inner product) oneDNN executed in 16-bit."""
    for line in verbose_log.splitlines():
        cols = line.split(",")
        if len(cols) > 7 and cols[0] == "onednn_verbose" and "exec" in cols[:4]:
            at = cols.index("exec")
            kind, impl, descs = cols[at + 2], cols[at + 3], ",".join(cols[at + 4 :])
            if kind in ("matmul", "inner_product") and ("bf16" in descs or "f16" in descs):
                return impl
    return None


_KERNELS: dict[tuple, MatmulKernel] = {}


def cpu_matmul_kernel(dtype: str) -> MatmulKernel:
    """Asked once per process, dtype and cap, in a process of the workers' environment (the workers get the
    grader's ONEDNN_MAX_CPU_ISA); a probe that cannot run counts as no fast kernel."""
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA")
    key = (dtype, cap)
    if key not in _KERNELS:
        if not any(flag.startswith("amx") for flag in cpu_flags()):
            _KERNELS[key] = MatmulKernel(dtype, None, cap, no_amx=True)
        else:
            _KERNELS[key] = MatmulKernel(dtype, _stored_probe(dtype, cap), cap)
    return _KERNELS[key]


def _stored_probe(dtype: str, cap: str | None) -> str | None:
    """The probe costs a process that imports torch (about 2 s), so `grader check` keeps its answer per CPU, cap
    and PyTorch in the cache folder."""
    support = bf16_support()
    name = json.dumps([support.model, support.flags, cap, torch.__version__, dtype])
    path = user_cache_dir() / "cpu-kernels.json"
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict) or name not in known:
        known = known if isinstance(known, dict) else {}
        known[name] = parse_kernel(_run_probe(dtype, cap))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(known))
        except OSError:
            pass  # asked again next time
    return known[name] if isinstance(known[name], str) else None


def _run_probe(dtype: str, cap: str | None) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ONEDNN_VERBOSE": "1", "OMP_NUM_THREADS": "1"}
    if cap is not None:
        env["ONEDNN_MAX_CPU_ISA"] = cap
    try:
        return subprocess.run(
            [sys.executable, "-c", _PROBE.format(dtype=dtype)], env=env, capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def speed_kind(device: str, amp_dtype: str) -> str:
    """The device kind a speedup threshold is looked up by: cuda, cpu_amx where this CPU's `amp_dtype` matmuls
    run on AMX, else cpu."""
    if device.startswith("cuda"):
        return "cuda"
    return FAST_CPU if cpu_matmul_kernel(amp_dtype).fast else "cpu"


def speed_kind_of(exercise: Exercise, device: str, amp_dtype: str) -> str:
    """The kind this grading's timed thresholds are looked up by; a CPU is probed only for a lesson that has a
    threshold for fast CPUs."""
    specs = [exercise.check(i) for i in ("speedup", "step_time")]
    if device.startswith("cuda") or not any(s is not None and FAST_CPU in s.min_speedup for s in specs):
        return "cuda" if device.startswith("cuda") else "cpu"
    return speed_kind(device, amp_dtype)


def workload_kind(exercise: Exercise, device: str) -> str:
    """Which of the workload's variants a grading on `device` runs: cuda, cpu_amx (where the lesson has one and
    the CPU is fast) or cpu."""
    if device.startswith("cuda"):
        return "cuda"
    if exercise.workload.cpu_amx is None:
        return "cpu"
    return speed_kind(device, exercise.workload.amp.cpu_dtype)


def device_model(device: str) -> str:
    """The device's make and model; on a CPU also the instruction-set cap, which changes oneDNN's kernels."""
    if device.startswith("cuda"):
        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    support = bf16_support()
    return f"cpu:{support.model}:{','.join(support.flags)}:{os.environ.get('ONEDNN_MAX_CPU_ISA', '')}"

"""What this CPU does with bfloat16 matmuls. CPUs with AVX512-BF16 or AMX run
them natively; AVX2-only ones emulate them, and bfloat16 autocast then runs
10-20x slower than float32. Gradings still work there (lessons are sized for
it), but an admin or a learner should know why a grading takes seconds."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.errors import EnvironmentProblem
from grader.lesson.schema import Exercise

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
    return Bf16Support(model, [f for f in NATIVE_FLAGS if f in flags], os.environ.get("ONEDNN_MAX_CPU_ISA"))


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

"""Peak memory of training steps, and what each step leaves alive, measured
the same way for the baseline and the submission. CUDA: the caching
allocator's `max_memory_allocated` after a reset and `memory_allocated` before
and after. CPU: the allocator events seen by the PyTorch profiler, replayed to
find the peak of live bytes, which is deterministic (unlike RSS).

`retained_bytes` is what a step left allocated beyond parameters, gradients and
optimizer state: zero for a step that keeps nothing, the size of the kept
tensors for one that appends outputs (and their graphs) to a list."""

from __future__ import annotations

from contextlib import contextmanager

import torch


def resident_bytes(params: list, optimizers: list, device_type: str = "cpu") -> int:
    """Bytes held between steps by parameters, gradients and optimizer state."""
    seen, total = set(), 0

    def add(t):
        nonlocal total
        if isinstance(t, torch.Tensor) and t.device.type == device_type:
            storage = t.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()

    for p in params:
        add(p)
        add(p.grad)
    for optimizer in optimizers:
        for state in optimizer.state.values():
            for value in state.values():
                add(value)
    return total


@contextmanager
def cpu_peak(result: dict, params, optimizers):
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    start = resident_bytes(params, optimizers)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        yield
    deltas = []

    def walk(node):
        if node.tag == _EventType.Allocation:
            deltas.append((node.start_time_ns, node.extra_fields.alloc_size))
        for child in node.children:
            walk(child)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root)
    live = peak = 0
    for _, size in sorted(deltas):
        live += size
        peak = max(peak, live)
    end = resident_bytes(params, optimizers)
    result["peak_bytes"] = start + peak
    result["resident_bytes"] = start
    result["retained_bytes"] = live - (end - start)


@contextmanager
def cuda_peak(result: dict, device: torch.device, params, optimizers):
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before, start = torch.cuda.memory_allocated(device), resident_bytes(params, optimizers, "cuda")
    yield
    torch.cuda.synchronize(device)
    after, end = torch.cuda.memory_allocated(device), resident_bytes(params, optimizers, "cuda")
    result["peak_bytes"] = int(torch.cuda.max_memory_allocated(device))
    result["resident_bytes"] = start
    result["retained_bytes"] = int((after - before) - (end - start))


def measure(result: dict, device: torch.device, params, optimizers):
    if device.type == "cuda":
        return cuda_peak(result, device, params, optimizers)
    return cpu_peak(result, params, optimizers)

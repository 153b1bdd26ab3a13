"""The English wording of what timing says: the speedup check, a profiling lesson's step_time, and why a
CPU's 16-bit matmuls are not faster than float32 there (grader/judge/devices.py). Part of the catalog
(grader/wording/catalog.py), kept apart so that each file reads on a few screens."""

TIMING: dict[str, str | dict[str, str]] = {
    # -- speedup ------------------------------------------------------------------------------------------
    "speedup.not_applicable": "this exercise sets no speedup threshold for {device}: not applicable here (speedups "
    "are graded on CUDA)",
    "speedup.not_applicable_cpu": "not applicable here: {why}, so 16-bit is not faster than FP32 on this CPU "
    "(this lesson's speedup is graded on CUDA and on CPUs whose 16-bit matmuls run on AMX)",
    "cpu.no_amx": "this CPU has no AMX (its {dtype} matmuls run on vector units)",
    "cpu.kernel": "oneDNN runs {dtype} matmuls with {kernel}, without AMX",
    "cpu.kernel_capped": "oneDNN runs {dtype} matmuls with {kernel}, without AMX, under ONEDNN_MAX_CPU_ISA={cap}",
    "cpu.emulated": "PyTorch emulates {dtype} matmuls here (oneDNN runs no kernel for them)",
    "cpu.emulated_capped": "PyTorch emulates {dtype} matmuls here: ONEDNN_MAX_CPU_ISA={cap} leaves oneDNN no kernel "
    "for them",
    "speedup.cores": "your timed steps kept {cores:.1f} cores busy on average where the FP32 baseline uses one, so "
    "their times are weighed by the cores they used: on a CPU the speedup must come from 16-bit matmuls, not "
    "from more threads (torch.set_num_threads) or processes",
    "speedup.measured": "{ratio:.2f}x faster than FP32 (95% interval {low:.2f}x to {high:.2f}x over {rounds} rounds)",
    "speedup.pass": "{measured}; at least {need:.2f}x needed",
    "speedup.fail": "{measured}; the lower bound must reach {need:.2f}x.",
    "speedup.noisy": "The interval includes the threshold: the measurement was too noisy to be sure; grade again on "
    "a quieter machine.",
    "speedup.timed_params": "the timed steps did not train the model the way the baseline's did (parameter {name!r} "
    "off by {dev:.1%} afterwards): timed steps must do the real work",
    "speedup.timed_losses": "the losses of the timed steps do not match the baseline's (step {step} off by "
    "{dev:.1%}): timed steps must compute the real loss",
    "step_time.not_applicable": "the step's time is graded on CUDA only ({device} here): not applicable here",
    "step_time.measured": "{ratio:.2f}x faster than the given step (95% interval {low:.2f}x to {high:.2f}x over "
    "{rounds} rounds)",
    "step_time.timed_params": "the timed steps did not train the model the way the given step's did (parameter "
    "{name!r} off by {dev:.1%} afterwards): timed steps must do the real work",
}

"""The English wording of what a grading on one device says of code written for another: the note that names
the learner's lines it never ran (grader/judge/unexercised.py: a branch for another device or dtype, a function
never called), what the float16 pass on a CPU found there (grader/judge/float16_pass.py), and a device written
as a literal (hardcoded_device, grader/judge/static.py)."""

OTHER_DEVICES: dict[str, str | dict[str, str]] = {
    "hardcoded_device.autocast": "torch.autocast is given the device {device!r} as a literal: where the model runs "
    "on another kind of device this autocast does nothing, and the step runs in float32",
    "hardcoded_device.autocast_off": "torch.autocast(enabled=False) is given the device {device!r} as a literal: "
    "where the model runs on another kind of device it does not turn that device's autocast off, so under an "
    "autocast of that device around it, the ops it should keep out of autocast still run in 16-bit",
    "hardcoded_device.scaler": "the GradScaler is made for the device {device!r}, written as a literal: on another "
    "kind of device it is disabled or refuses the gradients, so the loss is not scaled",
    "hardcoded_device.mesh": "init_device_mesh is given the device {device!r} as a literal: on another kind of "
    "device its process group does not match where the model's tensors live, and the collectives fail",
    "hardcoded_device.emulate": "Float8LinearConfig is given emulate=True as a literal, the CPU's setting: on a "
    "GPU with FP8 kernels the matmuls would still be float32 ones of FP8-rounded numbers, so FP8 buys nothing",
    "hardcoded_device": "a device is written as the literal {device!r}, so this code is right on one kind of device "
    "only",
    "hardcoded_device.fix": "use the device_type argument the grader passes instead of a literal "
    "(torch.autocast(device_type=device_type, ...), Float8LinearConfig(emulate=device_type != 'cuda')), so the same "
    "code is right on a CPU and on a GPU",
    "not_exercised": {
        "one": "line {lines} of {function} never ran in this grading ({device}, {dtype}), so no check saw it",
        "other": "lines {lines} of {function} never ran in this grading ({device}, {dtype}), so no check saw them",
    },
    "not_exercised.if": {
        "one": "line {lines} of {function} never ran in this grading ({device}, {dtype}): it is under "
        "`if {condition}:`, which was false here, so no check saw it",
        "other": "lines {lines} of {function} never ran in this grading ({device}, {dtype}): they are under "
        "`if {condition}:`, which was false here, so no check saw them",
    },
    "not_exercised.else": {
        "one": "line {lines} of {function} never ran in this grading ({device}, {dtype}): it is in the else of "
        "`if {condition}:`, which was true here, so no check saw it",
        "other": "lines {lines} of {function} never ran in this grading ({device}, {dtype}): they are in the else "
        "of `if {condition}:`, which was true here, so no check saw them",
    },
    "not_exercised.function": "{function} (lines {lines}) was never called in this grading ({device}, {dtype}), so "
    "no check saw it",
    "not_exercised.more": {
        "one": "{n} more block of your code never ran in this grading",
        "other": "{n} more blocks of your code never ran in this grading",
    },
    "not_exercised.would": "this line did not run here, and where it runs: {detail}",
    "not_exercised.would_cuda": "this line did not run here; where it runs, on CUDA: {detail}",
    "not_exercised.cuda_sync": "this line did not run here; on CUDA it would call {call} in the step: the host "
    "waits there for the GPU to finish its queued work",
    "not_exercised.cuda_value": "this line did not run here; on CUDA it would call {call} in the step: if its "
    "argument is a tensor on the GPU, the host waits there for the GPU to compute it",
    "not_exercised.unscaled": "this line did not run here; in float16 it would call backward() on a loss the "
    "GradScaler did not scale, so small gradients would underflow to zero",
    "not_exercised.no_update": "this line did not run here; in float16 it would call scaler.step(), and this "
    "file never calls scaler.update(), so the scale would never back off after an overflow",
    "float16_pass.found": "in a float16 pass on this CPU (your code run again with amp_dtype=torch.float16, as "
    "CUDA runs this lesson): {message}",
    "float16_pass.stopped": "the float16 pass on this CPU (your code run again with amp_dtype=torch.float16, as "
    "CUDA runs this lesson) stopped early: {message}; the calls before it were judged, the rest of that run was not",
    "float16_pass.fix": "this fails nothing by itself (the cause may be this CPU's, a CUDA call or a float16 kernel "
    "a CPU lacks, or your code's), but your float16 code after this point was not checked: read it again, or grade "
    "it on a GPU",
    "not_exercised.fix": "this verdict says nothing about code that did not run: a mistake there (float16 without a "
    "GradScaler, a host sync on CUDA) would show only where it runs; read it again, or grade it "
    "on a device and dtype that take that branch",
}

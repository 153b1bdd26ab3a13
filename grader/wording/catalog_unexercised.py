"""The English wording of the note that names the learner's lines a grading never ran
(grader/judge/unexercised.py): a branch for another device or dtype, a function never called."""

UNEXERCISED: dict[str, str | dict[str, str]] = {
    "not_exercised": "lines {lines} of {function} never ran in this grading ({device}, {dtype}), so no check saw them",
    "not_exercised.if": "lines {lines} of {function} never ran in this grading ({device}, {dtype}): they are under "
    "`if {condition}:`, which was false here, so no check saw them",
    "not_exercised.else": "lines {lines} of {function} never ran in this grading ({device}, {dtype}): they are in "
    "the else of `if {condition}:`, which was true here, so no check saw them",
    "not_exercised.function": "{function} (lines {lines}) was never called in this grading ({device}, {dtype}), so "
    "no check saw it",
    "not_exercised.more": {
        "one": "{n} more block of your code never ran in this grading",
        "other": "{n} more blocks of your code never ran in this grading",
    },
    "not_exercised.would": "this line did not run here, and where it runs: {detail}",
    "not_exercised.unscaled": "this line did not run here; in float16 it would call backward() on a loss the "
    "GradScaler did not scale, so small gradients would underflow to zero",
    "not_exercised.no_update": "this line did not run here; in float16 it would call scaler.step(), and this "
    "file never calls scaler.update(), so the scale would never back off after an overflow",
    "not_exercised.fix": "this verdict says nothing about code that did not run: a mistake there (float16 without a "
    "GradScaler, a host sync on CUDA) would show only where it runs; read it again, or grade it "
    "on a device and dtype that take that branch",
}

"""AMP Dojo's grader: runs a learner's mixed-precision training step next to an
FP32 baseline in separate processes and turns what it measures into a verdict."""

__version__ = "0.1.0"

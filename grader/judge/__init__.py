"""The grading process, outside every sandbox: it drives the workers (the
learner's, the FP32 baseline's, the reference's), checks each reply against the
protocol, times them itself, keeps the trusted runs, and collects the evidence
the checks judge (grader/checks/). Nothing in here trusts a worker."""

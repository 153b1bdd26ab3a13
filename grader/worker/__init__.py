"""Everything that runs inside the sandbox, beside the learner's code: the
worker process and what it loads (the lesson's workload, the call trace, the
FLOP and memory counters, the profiling census, the ranks' supervisor).

It imports nothing else of the grader, so the grading image holds this package
alone, and nothing it reports is believed: the worker measures, the judge
(grader/judge/) checks every reply and decides. The judge may import from here
what both sides need (building a lesson's workload, the wire format)."""

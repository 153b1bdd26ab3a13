"""`run()`: grade one submission of one exercise. The grading process starts a
worker for the learner's code and one for the public FP32 baseline (which never
sees learner code), drives them step by step, times them itself, loads their
parameters as plain tensors and decides every check here."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from grader.checks import profiling
from grader.judge import compile_warm, float16_pass, static, unexercised
from grader.judge.cache import user_cache_dir
from grader.judge.devices import amp_dtype_for, resolve_device, speed_kind_of
from grader.judge.drive import (
    ForcedOverflow,
    Progress,
    RunData,
    all_traces,
    collect_params,
    cut_at_overflow,
    drive,
    load_params,
    no_progress,
    partial_trace,
    window,
)
from grader.judge.evaluate import Evidence, crash_evidence, error_checks, evaluate, judged, submission_error
from grader.judge.phases import drive_phases
from grader.judge.plots import plots
from grader.judge.protocol import StepFailure
from grader.judge.syntax import syntax_verdict
from grader.judge.timing import (
    TimingPlan,
    announce_steps,
    budget_paused,
    budget_when_known,
    time_interleaved,
)
from grader.judge.trusted_runs import (
    DirectoryStore,
    KeyValueStore,
    cached_run,
    spawn_trusted,
    torch_profiled,
    trusted_roles,
    trusted_run,
    use_trusted_store,
    warm,
)
from grader.judge.warming import BackgroundWarm
from grader.judge.workers import init_worker, lesson_setup_error, spawn_worker, starting_point, workload_of
from grader.lesson.check_specs import threshold_for
from grader.lesson.schema import Exercise
from grader.results import GradingResult, advice_said_once
from grader.sandboxes import exclusive
from grader.sandboxes.launcher import LocalLauncher
from grader.sandboxes.process import WorkerFailure, WorkerProcess
from grader.worker import lazy_dynamo

# The public surface of grading, for the CLI, the web app and notebooks: run() and what a deployment sets up
# around it (the device, where trusted runs are kept, computing them ahead of the first grading, in the background
# below learners' gradings).
__all__ = [
    "run",
    "resolve_device",
    "use_trusted_store",
    "DirectoryStore",
    "KeyValueStore",
    "user_cache_dir",
    "warm",
    "BackgroundWarm",
    "Progress",
    "TimingPlan",
]

log = logging.getLogger("grader.runner")

lazy_dynamo.install()  # lesson setup code builds optimizers here too; nothing in this process compiles


def run(
    exercise: Exercise,
    source: str,
    *,
    device: str = "auto",
    launcher=None,
    progress: Progress | None = None,
    timing_plan: TimingPlan | None = None,
    cancel: threading.Event | None = None,
) -> GradingResult:
    """Grades `source`; a learner's failure is data in the result, never an exception. Setting `cancel` stops
    every process of this grading within a fraction of a second; the result then says it was cancelled."""
    started = time.perf_counter()
    progress = progress or no_progress
    launcher = launcher or LocalLauncher()
    device = resolve_device(device)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    progress("static")
    if unparsed := syntax_verdict(exercise.id, source, device, amp_dtype_for(exercise, device), launcher.name):
        return _finish(unparsed, exercise, started, progress)
    result = GradingResult(exercise.id, device, amp_dtype_for(exercise, device), sandbox=launcher.name)
    static_findings = static.analyse(source) + static.hardcoded_devices(source)
    if exercise.check("host_syncs") is None:  # graded by host_syncs where the lesson has it, a note elsewhere
        static_findings += static.cuda_only_host_syncs(source, exercise.entrypoint.name, note=True)
    start = starting_point(exercise, device)
    speed_spec = exercise.check("speedup")
    given_spec = exercise.check("step_time")  # a profiling lesson: the fixed step timed against the given one
    speed = speed_kind_of(exercise, device, result.amp_dtype)  # cuda, cpu_amx or cpu: what thresholds apply
    needs_timing = speed_spec is not None and threshold_for(speed_spec.min_speedup, speed) is not None
    times_given = given_spec is not None and threshold_for(given_spec.min_speedup, speed) is not None
    profiled = any(c.id in profiling.CHECK_IDS for c in exercise.checks)
    wl = workload_of(exercise, device)
    sub_data, traces, base_worker, sub_worker, timing, futures = RunData(), [], None, None, None, {}
    failed_records: list[dict] = []  # what the lesson recorded in a step that failed (error path)
    cut = False  # the submission's run ended at the overflowed step (runner.cut_at_overflow)
    given_worker, given_timing = None, None
    spawned: list[WorkerProcess] = []
    phase_outputs: list[str] = []  # what the workers of a lesson's earlier phases printed
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trusted-runs")
    hold = exclusive.Hold(device)
    # Other gradings may use the device meanwhile, except where this one measures what they would disturb:
    # CUDA memory peaks, and (below) the timed rounds.
    alone_throughout = kind == "cuda" and exercise.check("memory") is not None
    try:
        hold.alone() if alone_throughout else hold.share()
        progress("baseline")
        if compile_warm.needed(exercise, device, launcher):  # the lesson's first grading here: its cache first
            compile_warm.warm_compile_cache(exercise, device, launcher, cancel)
        # Every process starts before any is waited for, so they import torch side by side; the trusted runs
        # are then driven on a thread while the submission is driven here (they are separate processes).
        roles = trusted_roles(exercise)
        pending = {
            r: spawn_trusted(launcher, exercise, r, device)
            for r in roles
            if (r == "baseline" and needs_timing)
            or (r == "given" and times_given)
            or cached_run(launcher, exercise, r, device) is None
        }
        spawned += pending.values()
        sub_worker = spawn_worker(launcher, exercise, source, "submission.py", device, trace=True)
        for w in (*spawned, sub_worker):
            w.cancel = cancel
        base_worker = pending.get("baseline") if needs_timing else None
        given_worker = pending.get("given") if times_given else None
        futures = {
            role: pool.submit(
                trusted_run,
                launcher,
                exercise,
                role,
                device,
                pending.get(role),
                keep=pending.get(role) is not None and pending.get(role) in (base_worker, given_worker),
            )
            for role in roles
        }
        budget_when_known(
            sub_worker,
            futures,
            launcher.limits,
            exercise,
            [
                (timing_plan.budget_s if timing_plan else spec.budget_s)
                for spec, timed in ((speed_spec, needs_timing), (given_spec, times_given))
                if timed
            ],
        )
        progress("starting", limit_s=launcher.limits.init_timeout_s)
        init_worker(launcher, sub_worker)
        sub_data.prepare_traces = sub_worker.prepare_traces
        progress("steps", total=wl.steps)
        sub_worker = drive_phases(  # a lesson in phases: a fresh worker per phase, resumed from a checkpoint
            launcher,
            exercise,
            device,
            sub_worker,
            sub_data,
            lambda worker, end, first: drive(
                worker,
                end,
                first=first,
                trace=True,
                measure_memory=exercise.check("memory") is not None,
                data=sub_data,
                progress=announce_steps(worker, wl.steps, progress),
                census=profiled,
                overflow=ForcedOverflow.of(exercise, device),
                survive_overflow=True,
            ),
            lambda: spawn_worker(launcher, exercise, source, "submission.py", device, trace=True),
            phase_outputs,
        )
        sub_worker.on_budget = None
        cut = cut_at_overflow(sub_data)
        if not cut:
            collect_params(sub_worker, sub_data)
        if not all(future.done() for future in futures.values()):
            progress("trusted")  # the FP32 baseline and the reference run are still going
        with budget_paused(sub_worker):
            for future in futures.values():
                future.result()  # the baseline's worker is free for timing only once its run is over
        if needs_timing and not cut:
            progress("timing", rounds=0)
            with budget_paused(sub_worker):
                hold.alone()
            plan = timing_plan or TimingPlan(
                budget_s=speed_spec.budget_s, threshold=threshold_for(speed_spec.min_speedup, speed)
            )
            timing = time_interleaved(base_worker, sub_worker, wl.steps, plan, progress)
            with budget_paused(sub_worker):
                hold.alone() if alone_throughout else hold.share()
            timing.after_params = (load_params(sub_worker), load_params(base_worker))
        if times_given and not cut:
            progress("timing_given", rounds=0)
            with budget_paused(sub_worker):
                hold.alone()
            plan = timing_plan or TimingPlan(
                budget_s=given_spec.budget_s, threshold=threshold_for(given_spec.min_speedup, speed)
            )
            given_timing = time_interleaved(
                given_worker, sub_worker, wl.steps, plan, lambda stage, **kw: progress("timing_given", **kw)
            )
            with budget_paused(sub_worker):
                hold.alone() if alone_throughout else hold.share()
            given_timing.after_params = (load_params(sub_worker), load_params(given_worker))
            futures["given"].result().top_ops = torch_profiled(given_worker, given_timing.next_step)
    except (StepFailure, WorkerFailure) as exc:
        if exc.payload.get("kind") == "setup":  # raised before the learner's module was loaded
            raise lesson_setup_error(exercise, exc.payload["message"]) from None
        # Even an "internal" error is only what the worker says, and learner code shares its process: it
        # is reported in the result, never raised as a fault of the platform.
        traces = all_traces(sub_data) + exc.payload.get("rank_traces", []) + partial_trace(exc.payload)
        failed_records = exc.payload.get("records") or []
        result.error = submission_error(exc.payload, source, traces)
    finally:
        pool.shutdown(wait=True)  # a trusted run still going finishes (and is cached) before its worker closes
        hold.release()
        result.output += "".join(phase_outputs)
        for w in (sub_worker, base_worker, *spawned):
            if w is not None:  # closed first: what it printed is all read only once its pipe is closed
                w.close()
                result.output += w.output() if w is sub_worker and not getattr(w, "output_kept", False) else ""
    if result.error is not None and result.error.kind == "cancelled":
        return _finish(result, exercise, started, progress)
    trusted = {role: future.result() for role, future in futures.items()}  # a failed baseline is the platform's
    base, ref, given = trusted.get("baseline"), trusted.get("reference"), trusted.get("given")
    if result.error is None:
        if cut:  # judged as the window of steps before the overflowed one, the trusted runs' too
            base, ref = (window(r, sub_data.overflow["step"]) if r is not None else None for r in (base, ref))
        evidence = Evidence(base, ref, start.state, start.layers, given, source, given_timing, start.untrained)
        result.checks = judged(
            lambda: evaluate(exercise, kind, result.amp_dtype, static_findings, sub_data, evidence, timing, speed),
            result,
            exercise,
        )
        result.plots = plots(sub_data, base, timing) if result.error is None else {}
        if given is not None and result.error is None:
            result.plots["profile"] = profiling.plot(sub_data.census, given.census, given.top_ops, kind)
    if result.error is not None:
        result.checks = judged(
            lambda: error_checks(
                exercise,
                kind,
                result,
                traces,
                static_findings,
                speed,
                crash_evidence(kind, result.amp_dtype, sub_data, base, source, failed_records),
            ),
            result,
            exercise,
        )
    ran = sub_data.lines_run
    if result.error is None and float16_pass.wanted(exercise, device, source, ran):
        budget_s = getattr(sub_worker, "budget_s", None)
        ran = _float16_pass(result, exercise, source, device, launcher, ran, progress, cancel, budget_s)
        if result.error is not None:  # cancelled meanwhile, or the pass's evidence was malformed
            return _finish(result, exercise, started, progress)
    for c in result.checks:
        progress("check", check=c.id, status=c.status)
    if result.error is None:
        prepare = exercise.entrypoint.prepare
        on_cpu = prepare.name if prepare is not None and not exercise.workload.move_models else None
        result.notes += unexercised.notes(
            source, ran, device, result.amp_dtype, exercise.entrypoint.name, given_on_cpu=on_cpu
        )
    advice_said_once(result.checks)
    result.notes = [f for c in result.checks for f in c.findings if f.severity == "info"] + result.notes
    return _finish(result, exercise, started, progress)


def _float16_pass(result, exercise, source, device, launcher, ran, progress, cancel, budget_s) -> set[int] | None:
    """grader/judge/float16_pass.py: the learner's float16 branch run on this CPU, its call order judged; returns
    the lines that ran in the grading or in the pass. It shares the device like the steps (no timing runs
    beside another grading's)."""
    progress("float16", total=float16_pass.PASS_STEPS)
    hold = exclusive.Hold(device)
    try:
        hold.share()
        run_16 = float16_pass.run_pass(launcher, exercise, source, device, cancel, budget_s)
    finally:
        hold.release()
    if run_16.failure is not None and run_16.failure.get("kind") == "cancelled":
        result.error = submission_error(run_16.failure)
        return ran
    result.checks = judged(lambda: float16_pass.judge(result, exercise, run_16), result, exercise)
    return float16_pass.lines_after(ran, run_16)


def _finish(result: GradingResult, exercise: Exercise, started: float, progress: Progress) -> GradingResult:
    result.duration_s = round(time.perf_counter() - started, 3)
    progress("done", status=result.status)
    return result

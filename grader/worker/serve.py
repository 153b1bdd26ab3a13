"""The child process that runs one piece of training code: the learner's
submission, the public FP32 baseline or the hidden reference, never two of
them. It answers the parent's JSON-line commands on private copies of its
original stdin/stdout; whatever the code prints goes to stderr, which the
parent only ever shows as text. It reports measurements; it decides nothing.

Run as `python -m grader.worker`: it imports what every grading needs, says it
is ready, and waits for its `init` request, which carries its spec (the code's
path and the public part of the exercise). A sandbox can so be started, and
warm, before any submission exists; each one takes exactly one."""

from __future__ import annotations

import base64
import faulthandler
import importlib.util
import inspect
import io
import math
import os
import signal
import sys
import traceback
import warnings
from contextlib import nullcontext as _null

from grader.worker import lazy_dynamo, phases
from grader.worker.channel import Channel
from grader.worker.errors import StepError, call_failure, describe_exception
from grader.worker.lines_run import LinesRun
from grader.worker.precision import PrecisionMode


class Worker:
    def __init__(self, spec: dict, rank: int = 0, world_size: int = 1):
        import torch

        from grader.worker import ranks

        self.spec = spec
        self.path = os.path.abspath(spec["code_path"])
        self.lines_run = LinesRun(self.path)  # the learner's lines that ran at load, in prepare and traced steps
        self.rank, self.world_size = rank, world_size
        # A lesson with ranks has a process group in every worker (the FP32 baseline's is a group of one).
        self.distributed = spec["exercise"]["workload"].get("ranks", 1) > 1
        device, self.backend = ranks.rank_device(spec["device"], rank, world_size)
        self.device = torch.device(device)
        self.device_type = self.device.type
        workload = spec["exercise"]["workload"]
        dtype_name = workload["amp"]["cuda_dtype"] if self.device_type == "cuda" else workload["amp"]["cpu_dtype"]
        from grader.worker.workload import DTYPES

        self.amp_dtype = DTYPES[dtype_name]
        self.recorder = None
        self.census = None  # grader/worker/census.py: syncs, copies and matmul dtypes of profiled steps
        self.fn = None
        self.prepared: dict = {}
        self.checkpoint_dir = None  # a lesson in phases: the folder of the checkpoint resume reads (phases.py)
        # Taken before the learner's module loads, so patching torch.cuda.synchronize cannot end a timed
        # request before the GPU has finished.
        self._synchronize = torch.cuda.synchronize

    def _backend_flags(self):
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = False

    def init(self, _msg) -> dict:
        import torch

        from grader.worker import compiling, tracing, workload

        compiling.seed_cache(os.path.dirname(self.path))  # before any code of the lesson's or the learner's runs
        try:
            torch.set_num_threads(self.spec.get("threads", 1))
            self._backend_flags()
            if self.distributed:
                from grader.worker import ranks

                ranks.join(self.rank, self.world_size, str(self.device), self.backend)
        except Exception as exc:  # noqa: BLE001 - the grader's own fault, not the learner's: reported as internal
            raise StepError(
                "internal", f"the grader could not prepare the worker: {exc!r}", tb=traceback.format_exc()
            ) from None
        # The lesson's problem is built before any learner code exists in this process: a failure here is
        # the lesson's, and the learner cannot have touched what it built.
        try:
            self.problem = workload.build_problem(self.spec["exercise"]["workload"], self.device)
        except workload.SetupError as exc:
            raise StepError("setup", exc.message, exc.line) from None
        if problem := self.problem.unprovided_by(self.spec["exercise"]["entrypoint"]):
            raise StepError("setup", problem)
        if self.spec.get("trace"):
            try:
                self.recorder = tracing.Recorder(
                    self.path, self.device_type, self.spec["exercise"]["workload"].get("libraries", [])
                )
                self.recorder.install()
                from grader.worker import census

                self.census = census.Census(self.recorder, self.device_type)
                self.census.install()
            except Exception as exc:  # noqa: BLE001
                raise StepError(
                    "internal", f"the grader could not prepare the worker: {exc!r}", tb=traceback.format_exc()
                ) from None
        self.module = self._load()
        ep = self.spec["exercise"]["entrypoint"]
        self.fn = self._entrypoint(self.module, ep)
        prepare = self._entrypoint(self.module, ep["prepare"]) if ep.get("prepare") else None
        amp = self.spec["exercise"]["workload"]["amp"]
        self.scaler = (
            torch.amp.GradScaler(
                self.device_type,
                init_scale=amp.get("init_scale", 2.0**16),
                growth_interval=amp.get("growth_interval", 2000),
                growth_factor=amp.get("growth_factor", 2.0),
                backoff_factor=amp.get("backoff_factor", 0.5),
            )
            if amp["scaler"]
            else None
        )
        root = self.problem.root
        self.module_names = {id(m): (name or "model") for name, m in root.named_modules()}
        if self.recorder:
            for model in self.problem.models.values():
                self.recorder.watch_model(model)
            for name, optimizer in self.problem.optimizers.items():
                self.recorder.watch_optimizer(optimizer, name)
        reply = {"params": sum(p.numel() for p in self.problem.parameters())}
        compiling.watch(self.problem.models.values())  # a warm-up call in prepare compiles the model's graph
        if prepare is not None:
            trace = self._prepare(prepare, ep["prepare"])
            if trace is not None:
                reply["trace"] = trace
        return reply

    def grader_arguments(self) -> dict:
        """What the grader itself passes, by name, to prepare and to each step."""
        return {
            "scaler": self.scaler,
            "device_type": self.device_type,
            "amp_dtype": self.amp_dtype,
            "device": self.device,
            "rank": self.rank,
            "world_size": self.world_size,
            **({phases.CHECKPOINT_DIR: self.checkpoint_dir} if self.checkpoint_dir else {}),
        }

    def _prepare(self, fn, spec: dict) -> dict | None:
        """Runs the learner's prepare once, traced as its own phase; keeps what it returns by name."""
        rec = self.recorder
        if rec:
            rec.events, rec.active = [], True
        try:
            with self.lines_run:
                out = fn(*self.problem.arguments(spec["params"], None, **self.grader_arguments()))
        except BaseException as exc:  # noqa: BLE001
            err = call_failure(exc, self.path, prepare=spec["name"])
            err.payload["phase"] = "prepare"
            if rec:
                err.payload["events"] = rec.events
            raise err from None
        finally:
            if rec:
                rec.active = False
        names = spec["returns"]
        values = [out] if len(names) == 1 else (out if names else [])
        if len(names) > 1 and (not isinstance(out, (tuple, list)) or len(out) != len(names)):
            line = getattr(getattr(fn, "__code__", None), "co_firstlineno", None)
            raise StepError.worded(
                "return",
                "error.prepare_return",
                line,
                name=spec["name"],
                n=len(names),
                names=", ".join(names),
                got=type(out).__name__,
            )
        self.prepared = {**self.prepared, **dict(zip(names, values))}  # resume after prepare replaces by name
        if rec and (changed := rec.tampered()):
            raise StepError.worded("tampering", "error.tampering", names=", ".join(changed[:4]))
        return {"step": None, "phase": "prepare", "events": rec.events, "device": str(self.device)} if rec else None

    def _load(self):
        try:
            source = open(self.path, encoding="utf-8").read()
            compile(source, self.path, "exec")
        except SyntaxError as exc:  # one ast.parse does not see ('return' outside a function): the compiler's
            error = StepError("syntax", f"SyntaxError: {exc.msg}", exc.lineno, (exc.text or "").rstrip() or None)
            error.payload["column"] = exc.offset
            raise error from None
        spec = importlib.util.spec_from_file_location("submission", self.path)
        module = importlib.util.module_from_spec(spec)
        try:
            with self.lines_run:  # a function the module calls as it loads (an object built at import) ran
                spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 - a learner's import-time failure is data
            if isinstance(exc, SystemExit):
                raise StepError.worded("exit", "error.exit_import") from None
            raise describe_exception(exc, self.path, kind="import") from None
        return module

    def _entrypoint(self, module, ep: dict):
        fn = getattr(module, ep["name"], None)
        expected = f"def {ep['name']}({', '.join(ep['params'])})"
        if fn is None or not callable(fn):
            raise StepError.worded("entrypoint", "error.entrypoint", name=ep["name"], expected=expected)
        try:
            inspect.signature(fn).bind(*ep["params"])
        except TypeError:
            line = getattr(getattr(fn, "__code__", None), "co_firstlineno", None)
            raise StepError.worded(
                "signature", "error.signature", line, name=ep["name"], n=len(ep["params"]), expected=expected
            ) from None
        except ValueError:
            pass
        return fn

    def steps(self, msg: dict) -> dict:
        from grader.worker import compiling, evidence, forced_overflow, gradients, memory, workload

        self._backend_flags()
        losses, scales, reply = [], [], {}
        rec = self.recorder
        for step in range(msg["start"], msg["start"] + msg["count"]):
            evidence.begin(step)  # what the lesson's setup code records from here to the step's end
            try:
                args = self.problem.arguments(
                    self.spec["exercise"]["entrypoint"]["params"], step, **{**self.grader_arguments(), **self.prepared}
                )
            except workload.SetupError as exc:
                raise StepError("setup", exc.message, exc.line, step=step) from None
            precision = None
            if rec and msg.get("trace"):
                rec.events, rec.active = [], True
            compiling.watch(self.problem.models.values())
            compiled_before = compiling.counts()
            if msg.get("coverage") or (rec and msg.get("trace")):  # loss ops are events of every traced step
                precision = PrecisionMode(rec, self.module_names)
                for model in self.problem.models.values():
                    precision.attach(model)
            mem: dict = {}
            hooks = (
                forced_overflow.poison_hooks(self.problem.parameters(), step, self.problem.optimizers.values())
                if msg.get("overflow")
                else []
            )
            kept = self._skippable() if msg.get("skip") else None
            counting = (
                self.census.start(self.problem.models.values(), self.module_names)
                if msg.get("profile") and self.census
                else None
            )
            profiled: dict = {}
            try:
                with (
                    memory.measure(mem, self.device, self.problem.parameters(), list(self.problem.optimizers.values()))
                    if msg.get("memory")
                    else _null()
                ):
                    with (
                        precision if precision is not None else _null(),
                        counting if counting is not None else _null(),
                        self._torch_profile(msg, profiled),
                        self.lines_run if msg.get("trace") else _null(),
                    ):
                        loss = self.fn(*args)
            except BaseException as exc:  # noqa: BLE001
                err = call_failure(exc, self.path)
                err.payload.update(step=step, records=evidence.end())  # what the lesson recorded before it failed
                if rec and rec.active:
                    err.payload["events"] = rec.events
                raise err from None
            finally:
                records = evidence.end()
                for hook in hooks:
                    hook.remove()
                if precision is not None:
                    precision.detach()
                census_events = self.census.stop() if counting is not None else None
                if rec:
                    self._step_state(rec)
                    rec.active = False
            if kept is not None:
                kept.restore()
            try:
                losses.append(self._loss_value(loss, step, overflowed=bool(msg.get("overflow") or kept)))
            except StepError as err:  # the step's calls explain a NaN loss (float16 overflow, say)
                err.payload["step"] = step
                if rec and msg.get("trace"):
                    err.payload["events"] = rec.events
                raise
            if self.scaler is not None:
                scales.append(phases.current_scale(self))
            if msg.get("grad_norms"):  # grader tune, of a trusted run
                reply.setdefault("grad_norms", []).append(gradients.gradient_norms(self.problem.models))
            if rec and (changed := rec.tampered() + (self.census.tampered() if self.census else [])):
                err = StepError.worded("tampering", "error.tampering", names=", ".join(changed[:4]))
                err.payload["step"] = step
                raise err
            if (grown := compiling.grown(compiled_before)) is not None:
                reply.setdefault("compiled", []).append({"step": step, **grown})
            if rec and msg.get("trace"):
                dtypes = sorted({str(p.dtype).replace("torch.", "") for p in self.problem.parameters()})
                reply.setdefault("traces", []).append({"step": step, "events": rec.events, "param_dtypes": dtypes})
                reply["lines_run"] = self.lines_run.reply()
            if precision is not None and msg.get("coverage"):
                reply["coverage"] = {"flops": precision.flops, "by_module": precision.by_module}
            if records:
                reply.setdefault("records", []).extend(records)
            if mem:
                reply.setdefault("memory", []).append(mem)
            if census_events is not None:
                reply.setdefault("census", []).append({"step": step, "events": census_events})
            if profiled:
                reply["top_ops"] = profiled["top_ops"]
        if self.device_type == "cuda":
            self._synchronize(self.device)
        reply.update(losses=losses, scales=scales)
        return reply

    @staticmethod
    def _step_state(rec) -> None:
        """What a traced step leaves in the model, read from it as the step ends (the libraries' own state)."""
        if rec.active and "torchao" in rec.libraries:
            from grader.worker import tracing_torchao

            tracing_torchao.step_state(rec)

    def _torch_profile(self, msg: dict, into: dict):
        """The real torch.profiler around the step, asked for in a trusted worker (the grader's own profile of a
        lesson's given step): the table a learner reads, shown beside the verdict."""
        if not msg.get("torch_profile"):
            return _null()
        from grader.worker import profiler_table

        return profiler_table.torch_profile(self.device_type, into)

    def _skippable(self):
        """The FP32 baseline has no scaler to skip the step the grader makes overflow in the other runs: it runs
        the step (its loss is compared) and is then put back as a skipped step leaves it, its schedulers too, with
        the gradients cleared, so every run goes on from the same point."""
        from grader.worker import forced_overflow

        schedulers = forced_overflow.schedulers_among(self.problem.constants, self.prepared)
        return forced_overflow.Skipped(self.problem.parameters(), list(self.problem.optimizers.values()), schedulers)

    def _loss_value(self, loss, step: int, overflowed: bool = False) -> float | None:
        import torch

        if isinstance(loss, torch.Tensor) and loss.numel() == 1:
            value = float(loss.detach().float())
        elif isinstance(loss, (int, float)) and not isinstance(loss, bool):
            value = float(loss)
        else:
            name = self.spec["exercise"]["entrypoint"]["name"]
            raise StepError.worded("return", "error.return", name=name, got=type(loss).__name__)
        if not math.isfinite(value):
            if overflowed:  # a loss term made of the step's own (overflowed) gradients, the reference's too
                return None
            raise StepError.worded("nonfinite", "error.nonfinite", value=str(value), step=step)
        return value

    save_phase, resume_phase = phases.save_phase, phases.resume_phase  # workload.phases (grader/worker/phases.py)

    def save(self, msg: dict) -> dict:
        import torch

        state, layouts = self.problem.saved()
        buffer = io.BytesIO()
        torch.save(state, buffer)
        reply = {"params": base64.b64encode(buffer.getvalue()).decode("ascii")}
        if layouts:  # one rank's pieces of sharded parameters: the grading process puts them together
            reply["shards"] = layouts
        return reply


def preload():
    """What every grading loads, loaded while the sandbox waits for a submission; the first optimizer, autocast
    region and GradScaler each load modules of their own. torch._dynamo stays out unless the code compiles
    (grader/worker/lazy_dynamo.py)."""
    import torch
    import torch.nn.functional as F
    import torch.utils.checkpoint

    from grader.worker import census, compiling, lines_run, memory, tracing, workload  # noqa: F401

    lazy_dynamo.install(compiling.install, lines_run.unseen_by_dynamo)

    weight = torch.nn.Parameter(torch.zeros(2, 2))
    for optimizer in (torch.optim.SGD([weight], lr=0.1), torch.optim.AdamW([weight], lr=0.1)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.linear(torch.ones(1, 2), weight).float().sum()
        loss.backward()
        optimizer.step()
    torch.amp.GradScaler("cpu")


def main():
    channel = Channel()
    ready_process(compiler="--compiler" in sys.argv[1:])
    channel.write({"ok": True, "ready": True})
    serve(channel)


def ready_process(compiler: bool = False):
    """Everything a worker does before it says it is ready (grader/worker/zygote.py does it once, then forks);
    `compiler`: torch.compile's machinery too, for a lesson that compiles (lazy_dynamo.load_compiler)."""
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    # torch warns on import when NumPy is absent (the grading image has none); the learner's output
    # should hold only what their code printed.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    from grader.worker.tracing_torchao import quiet_import_warnings

    quiet_import_warnings()  # torchao's lines about its missing CUDA extensions, should the code import it
    preload()
    if compiler:
        lazy_dynamo.load_compiler()


def serve(channel: Channel, rank: int = 0, world_size: int = 1):
    """Answers the parent's commands until it says exit; never returns. A blank worker whose code is to run as
    several ranks becomes their supervisor (grader/worker/ranks.py) when its `init` arrives; each rank it forks
    serves here as rank `rank` of `world_size`."""
    worker, code_path = None, ""
    while True:
        msg = channel.read()
        if msg is None or msg.get("cmd") == "exit":
            break
        try:
            if msg["cmd"] == "init":
                if msg["spec"].get("ranks", 1) > 1 and world_size == 1:
                    from grader.worker import ranks

                    ranks.supervise(channel, msg, serve)  # never returns
                code_path = msg["spec"]["code_path"]
                worker = Worker(msg["spec"], rank, world_size)
                reply = worker.init(msg)
            else:
                reply = getattr(worker, msg["cmd"])(msg)
            channel.write({"ok": True, **reply})
        except StepError as err:
            channel.write({"ok": False, "error": err.payload})
        except BaseException as exc:  # noqa: BLE001 - report, never crash silently
            channel.write({"ok": False, "error": describe_exception(exc, code_path).payload})
    channel.out.flush()
    os._exit(0)

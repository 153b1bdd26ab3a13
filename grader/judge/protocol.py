"""The reply protocol, the judge's half: what a worker may send, and how every
reply is checked before anything in it is believed. The worker's half is
grader/worker/ (serve.py answers, wire.py frames); learner code shares the
worker's process and can write anything to its pipe, so this module is the
spec, and anything outside it is the worker's failure (`protocol`).

Commands, one JSON object per line (judge -> worker):
    {"cmd": "init", "spec": ...}     -> {"ok": true, "params": n, "trace"?: prepare's calls}
    {"cmd": "steps", "start": i, "count": n, "trace"?, "coverage"?, "memory"?, "profile"?, "overflow"?, "skip"?,
     "torch_profile"?}              -> {"ok": true, "losses": [n floats], "scales": [...], "traces"?: [...],
                                        "coverage"?: {...}, "memory"?: [...], "census"?: [...], "top_ops"?: [...],
                                        "compiled"?: [{step, frames, graphs, graph_breaks, model_runs, compile_ms}],
                                        "records"?: [{step, name, value}] (grader/worker/evidence.py)}
    {"cmd": "save"}                  -> {"ok": true, "params": base64 of torch.save({name: float tensor})}
    {"cmd": "save_phase", "function": {name, params}, "phase": name}
                                     -> {"ok": true, "files": {relative path: base64}, "lines_run": [...]}
    {"cmd": "resume_phase", "function": {name, params, returns}, "files": {relative path: base64}}
                                     -> {"ok": true, "lines_run": [...]}   (workload.phases: grader/judge/phases.py)
    {"cmd": "exit"}
A failure is {"ok": false, "error": {"kind": one of ERROR_KINDS, "message": str, "said"?: {"key", "params"},
"line"?, "source_line"?, "traceback"?, "step"?, "phase"?, "events"?, "rank"?}}. With ranks the supervisor answers
{"ok": true, "ranks": [one reply per rank]}, or the lowest failing rank's error with the others' replies.

Sizes: a reply line is at most MAX_REPLY_BYTES and a `save` reply at most params_reply_limit() of the model the
judge built itself (both grader/sandboxes/process.py, which reads the pipe). Inside a reply:

Bounds on what a worker reports about the learner's code. Everything a worker sends is untrusted (learner code
shares its process and can rewrite any of it), and some of it becomes findings, figures and stored results: an
exception message of megabytes, a line number of 31 digits or a trace event holding a huge string would flow into
the result document, the database and every page that shows it. So each field is rebuilt here from the reply:
lines must fall inside the submitted source (and its text is read from that source, never from the reply),
numbers must be finite and in range, strings are cut to stated caps, and lists to stated lengths.
"""

from __future__ import annotations

import binascii
import io
import math
import sys
from contextlib import contextmanager, suppress

import torch

from grader.judge.static import caret_column
from grader.sandboxes.process import WorkerFailure, WorkerProcess
from grader.wording.catalog import EN, Said, say
from grader.worker import census, evidence

# ---- bounds on every field a worker reports ----

MAX_MESSAGE_CHARS = 4000  # an error message as the learner reads it (the worker cuts its own at 2000)
MAX_TRACEBACK_CHARS = 20_000  # the traceback kept with an error
MAX_SOURCE_LINE_CHARS = 300  # the learner's line shown beside an error
MAX_EVENT_STRING_CHARS = 200  # a string inside a trace event (a function's name, a dtype, ...)
MAX_EVENT_LIST = 32  # a list inside a trace event (dtypes of a function's inputs)
MAX_EVENT_FIELDS = 16
MAX_NUMBER = 1e300  # beyond it a float is no measurement
MAX_INT = 2**53  # an exact integer in JSON and in every database column we store


def cut(text, limit: int) -> str:
    """`text` as a string of at most about `limit` characters, the cut marked."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text)} characters in all]"


def source_line(code: str, line) -> int | None:
    """`line` if it is a line of `code` (1-based), else None: a worker's line number is only a claim."""
    if isinstance(line, int) and not isinstance(line, bool) and 1 <= line <= code.count("\n") + 1:
        return line
    return None


def line_text(code: str, line: int | None) -> str | None:
    if line is None:
        return None
    lines = code.splitlines()
    return cut(lines[line - 1].strip() if line <= len(lines) else "", MAX_SOURCE_LINE_CHARS)


def _value(v, nested: bool = False):
    """A trace event's field value: bools, None, bounded numbers, cut strings, and short lists of those or of
    flat records of them (a conversion's modules: {"name", "in", "out"}), never deeper."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v if -MAX_INT <= v <= MAX_INT else None
    if isinstance(v, float):
        return v if not math.isfinite(v) or abs(v) <= MAX_NUMBER else math.copysign(math.inf, v)
    if isinstance(v, str):
        return cut(v, MAX_EVENT_STRING_CHARS)
    if isinstance(v, dict) and nested:
        return {
            k: _value(x)
            for k, x in list(v.items())[:MAX_EVENT_FIELDS]
            if isinstance(k, str) and len(k) <= 40 and not isinstance(x, (list, dict))
        }
    if isinstance(v, list) and not nested:
        return [_value(x, nested=True) for x in v[:MAX_EVENT_LIST] if not isinstance(x, list)]
    return None


def bounded_event(e: dict, code: str) -> dict:
    """One trace event rebuilt: its kind, a line inside the source, and at most a few plain fields."""
    out = {"ev": cut(e["ev"], 40), "line": source_line(code, e.get("line"))}
    for k, v in list(e.items())[:MAX_EVENT_FIELDS]:
        if k not in out and isinstance(k, str) and len(k) <= 40:
            out[k] = _value(v)
    return out


def bounded_trace(t: dict, code: str) -> dict:
    """A traced step rebuilt around its cleaned events (the caller has checked that `events` is a list of
    dicts with a string `ev`)."""
    out = {k: _value(v) for k, v in t.items() if k in ("step", "phase", "device", "rank", "partial")}
    out["events"] = [bounded_event(e, code) for e in t["events"]]
    if "param_dtypes" in t:
        dtypes = t["param_dtypes"]
        out["param_dtypes"] = (
            [cut(d, 40) for d in dtypes[:MAX_EVENT_LIST] if isinstance(d, str)] if isinstance(dtypes, list) else []
        )
    return out


def bounded_error(e: dict, code: str, max_events: int) -> dict:
    """A worker's error report with every learner-controlled field bounded; the line's text comes from `code`.
    (The caller has checked kind and message; `said` is checked by runner.worded_error.)"""
    line = source_line(code, e.get("line"))
    text = line_text(code, line)
    column = None
    if e.get("kind") == "syntax" and line is not None:  # the whole line, indentation too, and the caret's column
        whole = code.splitlines()[line - 1] if line <= len(code.splitlines()) else ""
        text = cut(whole.rstrip(), MAX_SOURCE_LINE_CHARS)
        column = caret_column(text, e.get("column"))
    out = {
        **{k: e[k] for k in ("kind", "said", "rank", "phase") if k in e},
        "message": cut(e["message"], MAX_MESSAGE_CHARS),
        "traceback": cut(e.get("traceback") or "", MAX_TRACEBACK_CHARS)
        if isinstance(e.get("traceback", ""), str)
        else "",
        "line": line,
        "source_line": text,
        "column": column,
        "step": e["step"] if isinstance(e.get("step"), int) and 0 <= e["step"] < 10_000 else None,
    }
    events = e.get("events")
    if isinstance(events, list) and all(isinstance(x, dict) and isinstance(x.get("ev"), str) for x in events):
        out["events"] = [bounded_event(x, code) for x in events[:max_events]]
    if out["step"] is not None and e.get("records"):  # the failing step's, as a finished step's (malformed: none)
        with suppress(TypeError, KeyError, ValueError):
            out["records"] = _records(e["records"], out["step"])
    return out


# ---- checking replies ----


STRICT_BASE64 = {"strict_mode": True} if sys.version_info >= (3, 11) else {}  # as b64decode(validate=True)


def _params(reply: dict) -> dict:
    """The reply's text is taken out of it and decoded straight from the str (binascii reads an ASCII str in
    place; base64.b64decode would first copy it to bytes), so one large reply is not held several times over."""
    try:
        data = binascii.a2b_base64(reply.pop("params"), **STRICT_BASE64)
        params = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception:  # noqa: BLE001 - whatever a forged reply holds
        raise WorkerFailure(protocol("error.params_unreadable")) from None
    if not isinstance(params, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) and v.is_floating_point() for k, v in params.items()
    ):
        raise WorkerFailure(protocol("error.params_not_tensors"))
    return {k: v.float() for k, v in params.items()}


class StepFailure(Exception):
    def __init__(self, payload: dict):
        super().__init__(payload.get("message"))
        self.payload = payload


def protocol(key: str = "error.protocol", **params) -> dict:
    said = say(key, **params)
    return {"kind": "protocol", "message": str(said), "said": said.to_dict(), "line": None}


PROTOCOL = protocol()

ERROR_KINDS = {
    "syntax",
    "import",
    "entrypoint",
    "signature",
    "exception",
    "return",
    "nonfinite",
    "oom",
    "exit",
    "internal",
    "tampering",
    "timeout",
    "crash",
    "protocol",
    "setup",
    "lesson",
}


def _ok(reply: dict, world_size: int = 1, code: str = "") -> dict:
    """A worker's reply is untrusted data: an error must look like one the worker makes, and every field of it
    is bounded (grader/judge/py) against `code`, the source the worker runs."""
    if reply.get("ok") is True:
        return reply
    error = reply.get("error")
    if not isinstance(error, dict) or error.get("kind") not in ERROR_KINDS or not isinstance(error.get("message"), str):
        raise WorkerFailure(PROTOCOL)
    rank, said = error.get("rank"), worded_error(error.get("said"))
    checked = bounded_error(error, code, MAX_EVENTS)
    if said is not None:  # the worker sends a catalog key, never words: the judge words it
        checked["message"] = str(Said.of(said))
    raise StepFailure({**checked, "said": said, "rank": rank if _is_int(rank) and 0 <= rank < world_size > 1 else None})


def code_of(worker: WorkerProcess) -> str:
    """The source a worker runs (learner code for the submission's): its lines bound what the worker reports."""
    spec = getattr(worker, "spec", None)
    return spec.code if spec is not None else ""


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def rank_replies(worker: WorkerProcess, reply: dict) -> list[dict]:
    """One reply per rank (grader/worker/ranks.py), each checked like any worker's. Where one rank failed, the traces
    of the ranks that did answer go with its error: what they did differently can name the cause."""
    n, code = getattr(worker, "ranks", 1), code_of(worker)
    if n == 1:
        return [_ok(reply, code=code)]
    if reply.get("ok") is not True:
        try:
            _ok(reply, n, code)
        except StepFailure as exc:
            exc.payload["rank_traces"] = _sibling_traces(reply.get("ranks"), n, code)
            raise
    with malformed_is_protocol():
        replies = reply["ranks"]
        if not isinstance(replies, list) or len(replies) != n or not all(isinstance(r, dict) for r in replies):
            raise TypeError("ranks")
    return [_ok(r, n, code) for r in replies]


def _sibling_traces(replies, n: int, code: str) -> list[dict]:
    if not isinstance(replies, list) or len(replies) != n:
        return []
    out = []
    for rank, reply in enumerate(replies):
        if isinstance(reply, dict) and reply.get("ok") is True:
            try:
                out += [step_trace(t, rank) for t in _traces(reply.get("traces", []), code)]
                if "trace" in reply:
                    out += [prepare_trace(_traces([reply["trace"]], code)[0], rank)]
            except (KeyError, TypeError, ValueError, AttributeError):
                pass
    return out


def worded_error(said) -> dict | None:
    """The catalog key of an error a worker reports, kept only if it is one of the grader's own error messages
    with plain parameters: the web app words it in the learner's language, and nothing else."""
    if not (
        isinstance(said, dict)
        and isinstance(said.get("key"), str)
        and said["key"].startswith("error.")
        and said["key"] in EN
        and isinstance(said.get("params", {}), dict)
    ):
        return None
    params = said.get("params", {})
    if not all(isinstance(k, str) and _plain_param(v) for k, v in params.items()):
        return None
    return {"key": said["key"], "params": params}


def _plain_param(v) -> bool:
    """A parameter an error message may carry: a short string, or a number in the range the grader stores
    (an integer of 400 digits is no measurement, and no float format can write it)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return -MAX_INT <= v <= MAX_INT
    if isinstance(v, float):
        return math.isfinite(v) and abs(v) <= MAX_NUMBER
    return isinstance(v, str) and len(v) <= 2000


@contextmanager
def malformed_is_protocol():
    """Reading a reply of the wrong shape is the worker's failure, whatever the validator tripped on."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
        raise WorkerFailure(PROTOCOL) from None


MAX_EVENTS = 10_000  # per traced step; a real step records a few dozen


def _floats(reply: dict, key: str, expected=None) -> list[float]:
    """Finite numbers, as many as the request asked for."""
    values = reply[key]
    if not isinstance(values, list) or (
        expected is not None and len(values) not in ((expected,) if isinstance(expected, int) else expected)
    ):
        raise TypeError(key)
    out = [float(v) for v in values if not isinstance(v, (str, bool))]
    if len(out) != len(values) or not all(math.isfinite(v) for v in out):
        raise ValueError(key)
    return out


def step_trace(trace: dict, rank: int | None) -> dict:
    """A step's trace as the grader files it: which rank made it, and never the prepare phase, whatever the
    worker wrote there."""
    out = {k: v for k, v in trace.items() if k not in ("phase", "rank")}
    return out if rank is None else {**out, "rank": rank}


def prepare_trace(trace: dict, rank: int | None) -> dict:
    return {**step_trace(trace, rank), "phase": "prepare", "step": None}


def _traces(traces, code: str) -> list[dict]:
    """At most one traced step, each event rebuilt within the bounds of grader/judge/py."""
    if not isinstance(traces, list) or len(traces) > 1:
        raise TypeError("traces")
    for trace in traces:
        events = trace["events"]
        if (
            not isinstance(events, list)
            or len(events) > MAX_EVENTS
            or not all(isinstance(e, dict) and isinstance(e.get("ev"), str) for e in events)
        ):
            raise TypeError("events")
    return [bounded_trace(t, code) for t in traces]


def _coverage(coverage):
    """{"flops": {dtype: n}, "by_module": {name: {dtype: n}}} with non-negative numbers, or None."""
    if coverage is None:
        return None
    counts = [coverage["flops"], *coverage["by_module"].values()]
    for by_dtype in counts:
        if not isinstance(by_dtype, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e30
            for k, v in by_dtype.items()
        ):
            raise TypeError("coverage")
    return coverage


def _memory(steps) -> list[dict]:
    if not isinstance(steps, list) or len(steps) != 1:
        raise TypeError("memory")
    out = []
    for m in steps:
        peak, kept = m["peak_bytes"], m["retained_bytes"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**50 for v in (peak, kept)):
            raise TypeError("memory")
        out.append({"peak_bytes": peak, "retained_bytes": kept})
    return out


_CENSUS_FIELDS = {"sync": ("kind", "op"), "copy": ("dir", "op"), "matmul": ("op", "dtype", "module", "autocast")}


def _census(steps) -> list[dict]:
    """One step's census events (grader/worker/census.py), rebuilt field by field: known kinds, short strings, counts."""
    if not isinstance(steps, list) or len(steps) != 1:
        raise TypeError("census")
    out = []
    for s in steps:
        events = s["events"]
        if not isinstance(events, list) or len(events) > census.MAX_EVENTS:
            raise TypeError("census")
        clean = []
        for e in events:
            names = _CENSUS_FIELDS[e["ev"]]
            if not all(isinstance(e[k], str) and len(e[k]) <= 200 for k in names):
                raise TypeError("census")
            line, n, nbytes = e["line"], e["n"], e.get("bytes", 0)
            if not (line is None or _count(line)) or not _count(n) or not _count(nbytes):
                raise TypeError("census")
            clean.append(
                {
                    "ev": e["ev"],
                    **{k: e[k] for k in names},
                    "line": line,
                    "n": n,
                    **({"bytes": nbytes} if e["ev"] == "copy" else {}),
                }
            )
        out.append({"step": s["step"] if _count(s["step"]) else None, "events": clean})
    return out


COMPILED_FIELDS = ("frames", "graphs", "graph_breaks", "model_runs", "compile_ms")


def _compiled(steps) -> list[dict]:
    """What torch.compile did in one step (grader/worker/compiling.py): dynamo's counts, nothing else."""
    if steps is None:
        return []
    if not isinstance(steps, list) or len(steps) != 1:
        raise TypeError("compiled")
    s = steps[0]
    if not isinstance(s, dict) or not all(_count(s.get(k)) for k in ("step", *COMPILED_FIELDS)):
        raise TypeError("compiled")
    return [{k: s[k] for k in ("step", *COMPILED_FIELDS)}]


MAX_RECORDS_PER_STEP = evidence.MAX_PER_STEP
MAX_RECORDS_PER_RUN = 2000  # what one run's records may add up to, whatever the steps


def _records(records, step: int) -> list[dict]:
    """One step's records (grader/worker/evidence.py), rebuilt: a short name, a plain bounded value, and the step
    the judge asked for, whatever the reply says."""
    if records is None:
        return []
    if not isinstance(records, list) or len(records) > MAX_RECORDS_PER_STEP:
        raise TypeError("records")
    out = []
    for r in records:
        name = r["name"]
        if not isinstance(name, str) or not 0 < len(name) <= evidence.MAX_NAME:
            raise TypeError("records")
        out.append({"step": step, "name": name, "value": _value(r["value"])})
    return out


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**50

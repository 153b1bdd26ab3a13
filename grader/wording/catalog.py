"""Everything the grader tells a learner, worded once. A message is a key into
this catalog plus its parameters; the English templates are here and each
other language has a JSON catalog with the same keys (grader/wording/translations/).
Results carry the English text (for tools and logs) *and* the key with its
parameters, so the web app, the CLI and the notebook show the same message in
the learner's language without a second copy of the wording.

A parameter may itself be a message (a layer's description inside "... never
trained"), a list of messages (joined with "; "), or a lesson's own text
({"en": ..., "it": ...}); all are rendered in the same language. A message
that counts something is a dict by CLDR plural category, its count the `n`
parameter ({"one": "{n} passed", "other": ...}), and its figures are written
with the language's decimal symbol (grader/wording/locales.py)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from grader.wording.catalog_accelerate import ACCELERATE
from grader.wording.catalog_checks import CHECKS
from grader.wording.catalog_cli import CLI
from grader.wording.catalog_fsdp import FSDP
from grader.wording.catalog_other_devices import OTHER_DEVICES
from grader.wording.catalog_profiling import HOST_SYNCS
from grader.wording.catalog_timing import TIMING
from grader.wording.locales import choose, format_in

TRANSLATIONS = Path(__file__).resolve().parent / "translations"
LANGS = ("en", "it", "id")

EN: dict[str, str | dict[str, str]] = {
    **CHECKS,  # the checks' messages and findings (grader/wording/catalog_checks.py)
    **ACCELERATE,  # Accelerate's findings (grader/wording/catalog_accelerate.py)
    **FSDP,  # FSDP2's findings (grader/wording/catalog_fsdp.py)
    **TIMING,  # speedup, step_time and the CPU's kind (grader/wording/catalog_timing.py)
    **OTHER_DEVICES,  # code for another device: lines never run, literal devices (catalog_other_devices.py)
    **HOST_SYNCS,  # a profiling lesson's host syncs (grader/wording/catalog_profiling.py)
    **CLI,  # the grader command's own errors (grader/wording/catalog_cli.py)
    # -- a submission's errors (the kind stays in the result for tools) ----------------------------------
    "error.at_line": "line {line}: {message}",
    "error.raised": "{detail}",
    "error.on_rank": "rank {rank}: {message}",
    "error.prepare_return": "{name} must return {n} values, in this order: {names} (got {got})",
    "error.entrypoint": "no function named {name!r} was found; define `{expected}:`",
    "error.signature": "{name} must accept {n} positional arguments: `{expected}`",
    "error.return": "{name} must return the loss of the step (a one-element tensor or a float), got {got}",
    "error.nonfinite": "the loss became {value} at step {step}",
    "error.oom": "out of memory: the code tried to use more memory than the grader allows ({detail})",
    "error.exit_import": "the code called sys.exit() while being imported",
    "error.exit_step": "the code called sys.exit() during the training step",
    "error.exit_prepare": "the code called sys.exit() in {name}, which the grader calls once before the training steps",
    "error.lesson_code": "the grader could not grade this: the lesson's own code failed at line {setup_line} of "
    "its workload.setup ({detail}) when line {called_from} of your code called it. Tell your instructor, and "
    "check what that line passes to it",
    "error.lesson_code_alone": "the grader could not grade this: the lesson's own code failed at line "
    "{setup_line} of its workload.setup ({detail}). This is not a mistake in your code: tell your instructor",
    "error.tampering": "the code replaced functions the grader uses to watch the training ({names}): that is not "
    "allowed",
    "error.timeout": "the code did not finish within {seconds:.0f} s: look for an endless loop or a wait that never "
    "ends",
    "error.timeout_at": "the code did not finish within {seconds:.0f} s (it was running line {line}): look for an "
    "endless loop or a wait that never ends",
    "error.budget": "the whole grading may take at most {seconds:.0f} s for this lesson here (measured from how long "
    "the lesson's own solution took), and your code was still running {during}: look for a wait, a "
    "sleep or a loop that makes it much slower than it needs to be",
    "budget.during_init": "while it was being loaded, before the first training step",
    "budget.during_step": "in training step {step}",
    "budget.during_step_at": "in training step {step}, at line {line}",
    "budget.during_other": "after the training steps (while the grader timed it or checked the overflow step)",
    "error.killed_oom": "the process running the code ended unexpectedly: it was killed (signal 9), most likely for "
    "using too much memory",
    "error.killed_signal": "the process running the code ended unexpectedly: it was killed by signal {signal}",
    "error.exited": "the process running the code ended unexpectedly: it exited with status {status} before "
    "answering (sys.exit or os._exit?)",
    "error.protocol": "the worker's reply was malformed (did the code write to the grader's channel?)",
    "error.protocol_detail": "the worker's reply was malformed (did the code write to the grader's channel?) "
    "({detail})",
    "error.not_a_reply": "the worker sent something that is not a reply (did the code write to the grader's channel?)",
    "error.oversized": "the worker sent an oversized reply (over {limit} MiB)",
    "error.oversized_params": "the worker's saved parameters were over {limit} MiB, far more than this lesson's model "
    "holds: did the code add tensors to the model?",
    "error.params_unreadable": "the saved parameters could not be read",
    "error.params_not_tensors": "the saved parameters are not a dict of float tensors",
    "error.params_shards": "the ranks' saved pieces of parameter {name!r} do not make up one whole tensor",
    "error.cancelled": "the grading was cancelled before it finished",
    # -- measured values against their thresholds (grader/wording/phrases.py) --------------------------------------
    "measure.needs": "needs {x}",
    "measure.at_most": "at most {x}",
    "measure.at_least": "at least {x}",
    "measure.none": "none",
    "measure.loss": "loss vs FP32",
    "measure.at_step": "{value} (step {step})",
    "measure.update": "update vs FP32",
    "measure.update_worst": "update vs FP32 (worst: {name})",
    "measure.fraction_16bit": "matmul FLOPs in 16-bit",
    "measure.rank_update": "weights vs rank 0 (worst: {name}, rank {rank})",
    "measure.toward_amp": "weights moved from the FP32 run toward a mixed-precision run",
    "measure.toward_amp_needs": "about 100% when the 16-bit work is real",
    "measure.peak": "peak memory",
    "measure.peak_value": "{size} ({ratio} of the FP32 baseline's)",
    # a size in bytes, as a parameter of another message (phrases.amount): written when that message is
    "size.mib": "{amount:.1f} MiB",
    "size.kib": "{amount:.1f} KiB",
    "measure.kept": "kept alive after each step (most)",
    "measure.overflow_changed": "weight tensors changed by the overflowed step {step}",
    "measure.scale": "loss scale before → after",
    "measure.lower_after": "a lower scale after",
    "measure.speedup": "speedup",
    "measure.speedup_value": "{ratio}x (95% interval {low}x to {high}x over {rounds} rounds)",
    "measure.lower_bound": "a lower bound of at least {x}x",
    "measure.named": "named in {answer}",
    "measure.syncs": "host syncs per step",
    "measure.float32_matmuls": "float32 matmuls per step",
    "measure.copies": "host↔device copies per step",
    "measure.with_given": "{n} (the given step: {given})",
    "measure.toward_reference": "weights moved from the given step's run toward the reference's",
    "measure.step_time": "speedup over the given step",
    # -- naming a layer so a learner recognises it --------------------------------------------------------
    "layer": "the {nth} {kind} layer ({name}, {shape})",
    "layer.module": "module {name}",
    "shape.features": "{a}->{b}",
    "shape.channels": "{a}->{b} channels",
    "shape.embedding": "{a}x{b}",
    "shape.attention": "attention",
    "ordinal.1": "first",
    "ordinal.2": "second",
    "ordinal.3": "third",
    "ordinal.4": "fourth",
    "ordinal.5": "fifth",
    "ordinal.6": "sixth",
    "ordinal.7": "seventh",
    "ordinal.8": "eighth",
    "ordinal.9": "ninth",
    "ordinal.10": "tenth",
    "ordinal.n": "#{n}",
    "text": "{text}",  # a lesson's own words ({"en": ..., "it": ..., "id": ...}), e.g. its parity advice
    # -- the terminal report, grader hint/quiz/check --watch and the notebook's own words (grader/wording/report.py,
    # grader/cli.py, amp_dojo/): badges, stages, headings of error kinds, the summary line -----------------
    "report.verdict.pass": "PASS",
    "report.verdict.fail": "FAIL",
    "report.verdict.error": "ERROR",
    "report.verdict.not_applicable": "N/A",
    "report.count.pass": "{n} passed",
    "report.count.fail": "{n} failed",
    "report.count.error": "{n} not run",
    "report.count.not_applicable": "{n} not applicable",
    "report.summary.pass": "passed",
    "report.summary.fail": "failed",
    "report.summary.error": "your code stopped before the end",
    "report.summary.syntax": "syntax error: your code did not run",
    "report.score": "score {n}%",
    "report.took": "grading took {seconds} s",
    "report.took_wall": "grading took {seconds} s, the whole command {wall} s",
    "report.header": "{lesson} on {device} ({dtype}), sandbox {sandbox}",
    # the built-in checks by name (a lesson's own check has a title of its own); the id stays in the result
    "check_name.call_order": "Call order",
    "check_name.parity": "Parity with FP32",
    "check_name.coverage": "16-bit coverage",
    "check_name.overflow": "Overflow handling",
    "check_name.speedup": "Speedup",
    "check_name.memory": "Peak memory",
    "check_name.ranks": "Ranks agree",
    "check_name.bottleneck": "What your profile found",
    "check_name.host_syncs": "Host syncs",
    "check_name.matmul_dtypes": "Matmul dtypes",
    "check_name.transfers": "Host-device copies",
    "check_name.step_time": "Faster than the given step",
    "report.mistake": "mistake",
    "report.note": "note",
    "report.notes": "Notes on this grading:",
    "report.fix": "fix:",
    "report.printed": "What your code printed",
    "report.printed_more": {"one": "... {n} more line", "other": "... {n} more lines"},
    "stage.loading": "loading PyTorch",
    "stage.static": "reading your code",
    "stage.baseline": "running the FP32 baseline",
    "stage.starting": "starting your code",
    "stage.steps": "training and comparing with FP32: {total} steps",
    "stage.step": "training and comparing with FP32: step {n} of {total}",
    "stage.trusted": "finishing the FP32 baseline and the reference run",
    "stage.float16": "running your float16 code on the CPU",
    "stage.timing": "timing against the baseline",
    "stage.timing_round": "timing against the baseline: round {n}",
    "stage.timing_given": "timing against the given step",
    "stage.timing_given_round": "timing against the given step: round {n}",
    "stage.so_far": "{x}x so far",
    "stage.check": "check {check}: {verdict}",
    "stage.done": "done",
    "stage.interrupted": "interrupted",
    "report.local_sandbox": "sandbox: local (your code runs unisolated, as you: fine for your own code only)",
    "remote.logged_in": "Logged in to {url} as {user} (kept in {path}).",
    "remote.logged_out": "Logged out: the token stays valid until you revoke it on your account page.",
    "remote.not_logged_in": "Not logged in.",
    "remote.submitted": "Submitted as {id}: {url}",
    "notebook.tutor_first": "Run a cell with `%%grade LESSON --submit` first: the tutor answers about the server's verdict.",
    "remote.asking": "Graded. The tutor's answer (it explains the findings; it never writes the solution):",
    "remote.verdict": "The server's verdict (what counts on your web page and courses): {url}",
    "watch.watching": "watching {file}: save it to grade again (Ctrl+C stops)",
    "watch.changed": "{file} changed: grading again",
    "watch.missing": "{file} is gone: waiting for it to come back",
    "watch.stopped": "stopped watching {file}",
    "hint.shown": "Hint {shown} of {total}",
    "hint.done": "All hints shown ({total} of {total})",
    "hint.reset": "hints of {lesson} forgotten: the next `{command}` starts from the first",
    "hint.more": "`{command}` shows the next one",
    "hint.again": "`{command}` starts again from the first",
    "report.stuck": "Stuck? `{command}` shows a hint",
    "show.once": "once, before the steps",
    "show.hints": "Hints",
    "show.quiz": "Quiz",
    "show.answers": "Answers",
    "show.next": "Start with: {start}   Check with: {check}   Stuck? {hint}   Then: {quiz}",
    "start.wrote": "wrote {path}; edit it, then run: {command}",
    "quiz.question": "Question {n} of {total}",
    "quiz.prompt": "Your answer ({letters})",
    "quiz.bad_choice": "answer with one of {letters}",
    "quiz.right": "Right.",
    "quiz.wrong": "Not quite.",
    "quiz.retry": "Think again and try another answer.",
    "quiz.answer_was": "The answer is {letter}).",
    "quiz.summary": "{right} of {total} right at the first try",
    "report.kind.syntax": "Your code has a syntax error and did not run",
    "report.kind.import": "Your code failed while it was being imported",
    "report.kind.entrypoint": "The function to grade is missing",
    "report.kind.signature": "The function has the wrong parameters",
    "report.kind.exception": "Your code raised an exception",
    "report.kind.return": "The function did not return the loss",
    "report.kind.nonfinite": "The loss became NaN or infinite",
    "report.kind.oom": "Your code used more memory than allowed",
    "report.kind.exit": "Your code ended the process",
    "report.kind.timeout": "Your code ran for too long",
    "report.kind.crash": "The process running your code crashed",
    "report.kind.tampering": "Your code replaced the grader's instruments",
    "report.kind.protocol": "Your code disturbed the grader's channel",
    "report.kind.internal": "The grader could not prepare the run",
    "report.kind.cancelled": "The grading was cancelled before it had a verdict",
    "report.kind.other": "Your code stopped ({kind})",
    "notebook.cell_line": "cell line {n}",
    "chart.title": "Loss: your code vs the FP32 baseline",
    "chart.yours": "your code",
    "chart.baseline": "FP32 baseline",
    "chart.step": "step",
    "notebook.grading": "Grading {lesson}: {stage}",
    "notebook.next_cell": "The next cell holds the starter under `%%grade {lesson}`: complete it and run it.",
    "notebook.task": "Task",
    "notebook.write": "Write",
}


@dataclass(frozen=True)
class Said:
    """A message before it is put into words: its key and parameters."""

    key: str
    params: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return render(self.key, self.params)

    def to_dict(self) -> dict:
        return {"key": self.key, "params": {k: _plain(v) for k, v in self.params.items()}}

    @classmethod
    def of(cls, part) -> Said:
        """Back from to_dict() (a finding's or a check's message, to be quoted in another); a plain string, or
        a lesson's {"en": ...}, becomes the lesson's own text."""
        if isinstance(part, Said):
            return part
        if isinstance(part, dict) and isinstance(part.get("key"), str):
            return cls(part["key"], part.get("params") or {})
        return own(part)


def say(key: str, **params) -> Said:
    if key not in EN:
        raise KeyError(f"no message {key!r} in grader/wording/catalog.py")
    return Said(key, params)


def own(text) -> Said:
    """A lesson's own text (a str, or {"en": ..., "it": ...}) as a message."""
    return Said("text", {"text": text if isinstance(text, dict) else {"en": str(text)}})


def _plain(value):
    """A parameter as JSON: nested messages become {"key", "params"}."""
    if isinstance(value, Said):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@lru_cache(maxsize=8)
def catalog(lang: str) -> dict[str, str | dict[str, str]]:
    if lang == "en" or lang not in LANGS:
        return EN
    return {**EN, **json.loads((TRANSLATIONS / f"{lang}.json").read_text(encoding="utf-8"))}


def value_in(value, lang: str):
    if isinstance(value, Said):
        return render(value.key, value.params, lang)
    if isinstance(value, dict) and isinstance(value.get("key"), str):
        return render(value["key"], value.get("params") or {}, lang)
    if isinstance(value, dict) and "en" in value:  # a lesson's own text
        return value.get(lang) or value["en"]
    if isinstance(value, (list, tuple)):
        return "; ".join(str(value_in(v, lang)) for v in value)
    return value


def render(key: str, params: dict | None = None, lang: str = "en") -> str:
    """The message in `lang` (English where a catalog lacks it), its plural form chosen by its `n` and its numbers
    written as `lang` writes them. A key the catalog does not know, or parameters that do not fit its template
    (a number no format can write included), come back as the key itself rather than an exception: results are
    data."""
    template = choose(catalog(lang).get(key) or EN.get(key), params, lang)
    if template is None:
        return key
    values = {k: value_in(v, lang) for k, v in (params or {}).items()}
    # OverflowError: an integer too large for a float format ({seconds:.0f} of 10**400), which a forged reply sends
    unfit = (KeyError, IndexError, ValueError, TypeError, OverflowError)
    try:
        return format_in(template, lang, **values)
    except unfit:
        try:
            return format_in(choose(EN[key], params, "en"), lang, **values)
        except unfit:
            return key


def words(parts) -> tuple[str, list[dict]]:
    """A check's message from one message or several (joined by spaces): its English text and its parts."""
    parts = [Said.of(p) for p in ([parts] if isinstance(parts, (Said, dict)) else parts)]
    return " ".join(str(p) for p in parts), [p.to_dict() for p in parts]

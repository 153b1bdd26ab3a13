"""`%%grade LESSON`, `%grade_show LESSON` and `%tutor QUESTION`.

The cell under `%%grade` is never run by the kernel: its text goes to
grader.runner.run() exactly as a file does for `grader check`, in a sandbox
picked the same way (`--sandbox auto`: docker, else bubblewrap, else a local
process), and the verdict comes back as HTML (with the plain report as its
text/plain form)."""

from __future__ import annotations

import os

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import HTML, Markdown, Pretty, display

from amp_dojo.html import CELL_OFFSET, grading_html, progress_html
from grader import remote, runner
from grader.errors import GraderError
from grader.lesson.base import LANGUAGES, localize
from grader.lesson.loader import load_exercise
from grader.results import GradingResult
from grader.sandboxes.kinds import SANDBOXES, make_launcher
from grader.sandboxes.limits import limits_from
from grader.wording import report
from grader.wording.phrases import phrase, stage_in_words

WAIT_S = 600  # at most this long for the server's verdict
last_result = None  # the GradingResult of the latest %%grade in this kernel (amp_dojo.last_result)
last_submission = None  # (lesson, submission id) of the latest %%grade --submit: what %tutor asks about


class Graded:
    """A grading as the notebook shows it; `.result` is the GradingResult (also `amp_dojo.last_result`)."""

    def __init__(self, result: GradingResult, source: str, lang: str, note: str = ""):
        self.result, self.source, self.lang, self.note = result, source, lang, note

    def _repr_html_(self) -> str:
        return grading_html(self.result, self.source, self.lang, self.note)

    def __repr__(self) -> str:
        return report.plain_text(self.result, report.Source("cell", self.source, CELL_OFFSET), self.lang)


class _Progress:
    """Runner progress as one line in the cell's output, replaced in place, then by the verdict."""

    def __init__(self, lesson: str, lang: str):
        self.lesson, self.lang = lesson, lang
        self.handle = display(HTML(progress_html(lesson, stage_in_words("static", {}, lang), lang)), display_id=True)

    def __call__(self, stage: str, **info) -> None:
        if stage != "done":
            self.handle.update(HTML(progress_html(self.lesson, stage_in_words(stage, info, self.lang), self.lang)))


def _options(line: str, magic) -> object:
    try:
        return parse_argstring(magic, line)
    except UsageError:
        raise
    except SystemExit:  # argparse's own exit on a bad option
        raise UsageError(f"bad options: {line!r}") from None


def submitted(login, lesson: str, cell: str, lang: str) -> Graded:
    """`%%grade --submit`: the cell as the account's submission on the server, and the server's verdict shown
    as a local one is (the same HTML and plain report), under a note with its address."""
    try:
        sent = remote.submit(login, lesson, cell, lang)
        document = remote.verdict(remote.wait_for(login, sent["id"], lang, WAIT_S))
    except GraderError as exc:
        raise UsageError(exc.message) from None
    global last_submission
    last_submission = (lesson, sent["id"])
    note = phrase("remote.verdict", lang, url=f"{login.url}/submissions/{sent['id']}")
    return Graded(remote.Received(document), cell, lang, note)


@magics_class
class GradeMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self._launchers: dict[tuple, object] = {}

    def _launcher(self, sandbox: str, limits: list[str]):
        """One launcher per sandbox and limits for the kernel's life: each backend is probed once, and one warm
        sandbox waits for the next %%grade. Trusted runs are kept in the user's cache, as `grader check` does."""
        from grader.sandboxes.pool import WarmPool

        key = (sandbox, tuple(limits))
        if key not in self._launchers:
            pairs = [item.partition("=") for item in limits]
            if any(not sep for _, sep, _ in pairs):
                raise UsageError("--limit takes NAME=VALUE, e.g. --limit step_timeout_s=120")
            runner.use_trusted_store(runner.DirectoryStore(runner.user_cache_dir()))
            self._launchers[key] = WarmPool(
                make_launcher(sandbox, limits_from({k: v for k, _, v in pairs}), allow_local=True), size=1
            )
        return self._launchers[key]

    @magic_arguments()
    @argument("lesson", help="the lesson's id, e.g. autocast")
    @argument("--device", default="auto", help="auto, cpu or cuda")
    @argument(
        "--sandbox",
        default=None,
        choices=SANDBOXES,
        help="where the code runs: auto (default, or AMP_DOJO_SANDBOX) picks docker, else bwrap, else a local process",
    )
    @argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="change a sandbox limit")
    @argument("--lang", default="en", choices=LANGUAGES)
    @argument(
        "--submit",
        action="store_true",
        help="then send the cell to the server of `grader login`: its verdict counts on your web page and courses",
    )
    @cell_magic
    def grade(self, line, cell):
        """Grade this cell's code as the lesson's submission (the kernel does not run it)."""
        args = _options(line, self.grade)
        try:
            ex = load_exercise(args.lesson)
            login = remote.saved() if args.submit else None  # not logged in: said before the grading
            launcher = self._launcher(args.sandbox or os.environ.get("AMP_DOJO_SANDBOX") or "auto", args.limit)
            progress = _Progress(ex.id, args.lang)
            try:
                result = runner.run(ex, cell, device=args.device, launcher=launcher, progress=progress)
            except KeyboardInterrupt:  # the kernel was interrupted: the workers are gone, say so instead of "grading"
                progress.handle.update(HTML(progress_html(ex.id, phrase("stage.interrupted", args.lang), args.lang)))
                raise
        except GraderError as exc:
            raise UsageError(exc.message) from None
        note = "" if launcher.isolated else phrase("report.local_sandbox", args.lang)
        graded = Graded(result, cell, args.lang, note)
        global last_result
        last_result = result
        progress.handle.update(graded)
        if login is not None:
            display(submitted(login, ex.id, cell, args.lang))

    @magic_arguments()
    @argument("lesson", help="the lesson's id, e.g. autocast")
    @argument("--lang", default="en", choices=LANGUAGES)
    @line_magic
    def grade_show(self, line):
        """Show the lesson, its task and the starter; the starter also comes as a new `%%grade` cell."""
        args = _options(line, self.grade_show)
        try:
            ex = load_exercise(args.lesson)
        except GraderError as exc:
            raise UsageError(exc.message) from None
        lang = args.lang
        entry = ex.entrypoint
        text = (
            f"# {localize(ex.title, lang)}\n\n{localize(ex.lesson, lang)}\n\n## {phrase('notebook.task', lang)}\n\n"
            f"{localize(ex.task, lang)}\n\n{phrase('notebook.write', lang)}: "
            f"`def {entry.name}({', '.join(entry.params)})`"
            f" → {entry.returns}\n\n```python\n{ex.starter_in(lang).rstrip()}\n```\n\n"
            f"{phrase('notebook.next_cell', lang, lesson=ex.id)}\n"
        )
        display(Markdown(text))
        self.shell.set_next_input(f"%%grade {ex.id}\n{ex.starter_in(lang).rstrip()}\n", replace=False)

    @magic_arguments()
    @argument("question", nargs="+", help="what to ask about the verdict")
    @argument("--lang", default="en", choices=LANGUAGES)
    @line_magic
    def tutor(self, line):
        """Ask the server's tutor about the verdict of the latest `%%grade --submit` cell (docs/tutor.md); the
        answer streams in below, from the grader's findings, never with the solution."""
        args = _options(line, self.tutor)
        if last_submission is None:
            raise UsageError(phrase("notebook.tutor_first", args.lang))
        lesson, sid = last_submission
        from grader.lesson import hints

        shown = display(Pretty(""), display_id=True)
        text = ""
        try:
            for event, data in remote.ask(remote.saved(), sid, " ".join(args.question), args.lang, hints.seen(lesson)):
                if event in ("delta", "replace", "error"):
                    piece = data.get("text") if event != "error" else data.get("message")
                    text = text + piece if event == "delta" else piece or ""
                    shown.update(Pretty(text))
        except GraderError as exc:
            raise UsageError(exc.message) from None

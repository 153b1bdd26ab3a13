"""How `grader check` looks in a terminal: one coloured line per check, each
mistake at file:line with its source line and fix, a closing summary line, and
a spinner while it grades. Layout and colour only: every phrase comes from
grader/wording/phrases.py (the message catalog), and each finding's message, fix and
line are the result's, in the learner's language.

Colour only where it is wanted: `--color auto` colours a terminal unless
NO_COLOR is set (no-color.org) or TERM is dumb; piped or redirected output is
plain text, unwrapped, with no escape codes at all."""

from __future__ import annotations

import io
import os
import re
import sys
from dataclasses import dataclass
from typing import IO

from rich.cells import cell_len
from rich.console import Console, Group
from rich.padding import Padding
from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.progress_bar import ProgressBar
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from grader.results import ERROR, FAIL, NOT_APPLICABLE, PASS, GradingResult
from grader.wording.phrases import (
    check_name,
    error_heading,
    error_in_words,
    localized,
    measured_in_words,
    phrase,
    stage_in_words,
    summary_in_words,
    verdict,
)

COLOUR_MODES = ("auto", "always", "never")
STYLE = {PASS: "bold green", FAIL: "bold red", ERROR: "bold red", NOT_APPLICABLE: "bold yellow"}
PLAIN_WIDTH = 80  # of the closing line when the output is not a terminal, as pytest draws it
MAX_OUTPUT_LINES = 40
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Learner-controlled text (what the code printed, its exception, its source lines) with control
    characters shown as escapes: an escape sequence in a print must not redraw the report."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _isatty(stream: IO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wants_colour(mode: str, stream: IO) -> bool:
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return _isatty(stream)


def console_for(stream: IO | None = None, colour: str = "auto") -> Console:
    """A terminal wraps at its width; anything else gets whole lines (grep, CI logs)."""
    stream = stream or sys.stdout
    tty, coloured = _isatty(stream), wants_colour(colour, stream)
    return Console(
        file=stream,
        force_terminal=tty or coloured,
        color_system="auto" if coloured else None,
        width=None if tty else 10_000,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=not tty,
        force_jupyter=False,
    )


class _ClosingRule:
    """rich's Rule cuts a title wider than the terminal with an ellipsis; a summary is never cut: where it does
    not fit between two bars it is printed whole, folded, above a bare rule."""

    def __init__(self, title: str, style: str):
        self.title, self.style = title, style

    def __rich_console__(self, console: Console, options):
        if cell_len(self.title) + 8 <= options.max_width:
            yield Rule(Text(self.title, style=self.style), style=self.style)
        else:
            yield Text(self.title, style=self.style, overflow="fold")
            yield Rule(style=self.style)


def _plain_rule(title: str, style: str) -> Text:
    bar = "=" * max(3, (PLAIN_WIDTH - len(title) - 2) // 2)
    return Text(f"{bar} {title} {bar}", style=style)


@dataclass
class Source:
    """The graded code and how its lines are named: `offset` shifts the numbers (a notebook cell's code
    starts on the cell's second line, under `%%grade`)."""

    name: str
    text: str
    offset: int = 0

    def where(self, line: int | None) -> str:
        return f"{printable(self.name)}:{line + self.offset}: " if line else ""

    def line_text(self, line: int | None, given: str | None = None) -> str | None:
        lines = self.text.splitlines()
        return given if given is not None else (lines[line - 1] if line and 0 < line <= len(lines) else None)

    def number(self, line: int | None) -> str:
        return f"{line + self.offset:>4} | " if line else ""

    def code(self, line: int | None, given: str | None = None) -> Text | None:
        code = self.line_text(line, given)
        if code is None:
            return None
        return Text.assemble("  ", (self.number(line), "dim"), (printable(code.rstrip()), "bold"))

    def caret(self, line: int | None, given: str | None, column: int | None) -> Text | None:
        """A `^` under `column` (1-based) of the line `code()` shows: where Python stopped reading."""
        code = self.line_text(line, given)
        if code is None or not column:
            return None
        return Text.assemble("  " + " " * len(self.number(line)) + caret_pad(code, column), ("^", "bold red"))


def caret_pad(code: str, column: int) -> str:
    """What goes before a caret under `column` of `code` as the report prints it: tabs stay tabs (the terminal
    expands both lines alike), a control character takes the width of its escape."""
    return "".join("\t" if ch == "\t" else " " * len(printable(ch)) for ch in code[: column - 1])


def _finding(f: dict, check_message: str, src: Source, lang: str) -> list[Text]:
    """file:line, what kind, the id, the message (unless the check's line said it already), the source
    line and the fix."""
    info = f.get("severity") == "info"
    head = Text.assemble(
        (src.where(f.get("line")), "bold"),
        (phrase("report.note" if info else "report.mistake", lang), "cyan" if info else "red"),
        " ",
        (printable(f["id"]), "bold"),
    )
    if f["message"] != check_message:
        head.append(": " + printable(f["message"]))
    out = [head]
    if (code := src.code(f.get("line"))) is not None:
        out.append(code)
    out.append(Text.assemble((phrase("report.fix", lang), "green"), " " + printable(f["fix"])))
    return out


def _rows(doc: dict, src: Source, lang: str, titles: dict | None = None) -> list[tuple[Text, list[Text]]]:
    """(badge, lines) per check of a localized result document, and first the error if the code stopped. A check
    is named in `lang` (its id is in the result document)."""
    names = {c["id"]: check_name(c["id"], lang, titles) for c in doc["checks"]}
    id_width = max([10, *(len(n) for n in names.values())]) + 1
    rows: list[tuple[Text, list[Text]]] = []
    if err := doc.get("error"):
        body = [
            Text(error_heading(err["kind"], lang), "bold"),
            Text.assemble((src.where(err.get("line")), "bold"), printable(error_in_words(err, lang))),
        ]
        if (code := src.code(err.get("line"), err.get("source_line"))) is not None:
            body.append(code)
            if (caret := src.caret(err.get("line"), err.get("source_line"), err.get("column"))) is not None:
                body.append(caret)
        rows.append((Text(verdict(ERROR, lang), style=STYLE[ERROR]), body))
    for c in doc["checks"]:
        body = [Text.assemble((printable(names[c["id"]]).ljust(id_width), "bold"), " ", printable(c["message"]))]
        body += [
            Text(printable(line), style="dim" if c["status"] == PASS else "") for line in measured_in_words(c, lang)
        ]
        for f in c["findings"]:
            body += _finding(f, c["message"], src, lang)
        rows.append((Text(verdict(c["status"], lang), style=STYLE.get(c["status"], "bold")), body))
    return rows


def _layout(rows, badge_width: int, tty: bool) -> list:
    """On a terminal, a grid whose lines wrap under their column; elsewhere whole lines, no padding."""
    if not tty:
        out = []
        for badge, body in rows:
            out.append(Text.assemble(badge, " " * (badge_width + 1 - len(badge)), body[0]))
            out += [Text(" " * (badge_width + 1)) + line for line in body[1:]]
        return out
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, width=badge_width)
    grid.add_column(ratio=1, overflow="fold")  # a long path folds onto the next line, never cut off
    for badge, body in rows:
        grid.add_row(badge, Group(*body))
    return [grid]


def report(
    result: GradingResult,
    src: Source,
    lang: str = "en",
    *,
    tty: bool = False,
    titles: dict | None = None,
    wall_s: float | None = None,
) -> Group:
    """The whole report as one renderable, in `lang`; `tty` lays it out for a terminal (wrapped, a drawn rule)
    or as whole lines with pytest's '====' closing line. `titles` names the lesson's own checks; `wall_s` is the
    whole command's time, told beside the grading's own."""
    doc = localized(result.to_dict(), lang)
    badge_width = max(len(verdict(s, lang)) for s in (PASS, FAIL, ERROR, NOT_APPLICABLE)) + 1
    parts: list = [
        Text.assemble(
            (f"{printable(src.name)}: ", "bold"),
            phrase(
                "report.header",
                lang,
                lesson=doc["exercise"],
                device=doc["device"],
                dtype=doc["amp_dtype"],
                sandbox=doc["sandbox"],
            ),
        ),
        Text(""),
    ]
    parts += _layout(_rows(doc, src, lang, titles), badge_width, tty)
    in_checks = [f for c in doc["checks"] for f in c["findings"]]
    if own_notes := [f for f in doc.get("notes", []) if f not in in_checks]:  # a check's notes are shown with it
        parts += [Text(""), Text(phrase("report.notes", lang), style="bold")]
        for f in own_notes:
            parts += [Text("  ") + line for line in _finding(f, "", src, lang)]
    if printed := doc["output"].strip():
        out_lines = printed.splitlines()
        parts += [Text(""), Text(phrase("report.printed", lang), style="bold")]
        shown = [Text(printable(ln)) for ln in out_lines[:MAX_OUTPUT_LINES]]
        if len(out_lines) > MAX_OUTPUT_LINES:
            shown.append(Text(phrase("report.printed_more", lang, n=len(out_lines) - MAX_OUTPUT_LINES), "dim"))
        parts += [Padding(line, (0, 0, 0, 2)) if tty else Text("  ") + line for line in shown]
    summary = summary_in_words(doc, lang, wall_s)
    style = STYLE[PASS] if doc["status"] == PASS else STYLE[FAIL]
    parts += [Text(""), _ClosingRule(summary, style) if tty else _plain_rule(summary, style)]
    return Group(*parts)


def on_terminal(console: Console) -> bool:
    return _isatty(console.file)


def print_report(
    console: Console,
    result: GradingResult,
    src: Source,
    lang: str = "en",
    *,
    titles: dict | None = None,
    wall_s: float | None = None,
) -> None:
    console.print(report(result, src, lang, tty=on_terminal(console), titles=titles, wall_s=wall_s))


def plain_text(result: GradingResult, src: Source, lang: str = "en") -> str:
    """The report without colour or terminal layout (a notebook's text/plain, a log)."""
    buffer = io.StringIO()
    console_for(buffer, "never").print(report(result, src, lang))
    return buffer.getvalue()


class _StepsBar(ProgressColumn):
    """A bar while the training steps are counted; the other stages have the spinner alone. The count is
    kept in the task's fields, so the task never "finishes" and the spinner and clock keep going."""

    def render(self, task):
        done, total = task.fields.get("done"), task.fields.get("total_steps")
        if not total:
            return Text("")
        return ProgressBar(total=total, completed=done or 0, width=24)


class StageProgress:
    """The runner's progress callback. On a terminal: a spinner that names the stage, with a bar over the
    training steps, gone when the report prints. Elsewhere: one line per stage and per check."""

    def __init__(self, console: Console, lang: str = "en", live: bool | None = None):
        self.console, self.lang = console, lang
        self.live = on_terminal(console) if live is None else live
        self._progress: Progress | None = None
        self._task = None
        self._last: str | None = None

    def __enter__(self):
        if self.live:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                _StepsBar(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("", total=None)
        return self

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False

    def __call__(self, stage: str, **info) -> None:
        text = stage_in_words(stage, info, self.lang)
        if self._progress is not None:
            counted = stage in ("steps", "step")  # "step" n of total has started: n - 1 are done
            self._progress.update(
                self._task,
                description=text,
                total=None,
                done=info.get("n", 1) - 1 if counted else None,
                total_steps=info.get("total") if counted else None,
            )
            self._progress.refresh()  # shown now, not at the next tick: a stage may block the process at once
            return
        if stage == "step":
            return  # one line for the training stage, not one per step
        if text != self._last:
            self.console.print(Text(f"  .. {text}", style="dim"))
            self._last = text
